package validators

type advisoryCase struct {
	name string
	cmd  string
}

var advisoryCases = []advisoryCase{}
