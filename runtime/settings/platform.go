package settings

import "runtime"

var isDarwin = runtime.GOOS == "darwin"
