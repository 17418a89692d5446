module github.com/moat-sandbox/moat

go 1.26.8

require (
	github.com/spf13/cobra v1.10.2
	mvdan.cc/sh/v3 v3.14.1
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)
