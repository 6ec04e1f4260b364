package spec

// FieldPaths lists every field a spec may hold, named as error messages
// name them ("tasks[].resources.gpu.count"): what docs/jobspec.md must
// describe. It is built from the lists the decoder checks keys against,
// so a field the decoder learns appears here.
func FieldPaths() []string {
	var out []string
	add := func(prefix string, fields []string, nested map[string]func(string)) {
		for _, f := range fields {
			p := prefix + f
			out = append(out, p)
			if more, ok := nested[f]; ok {
				more(p)
			}
		}
	}
	resources := func(p string) {
		add(p+".", resourceFields, map[string]func(string){
			"gpu":     func(p string) { add(p+".", gpuFields, nil) },
			"devices": func(p string) { add(p+"[].", deviceFields, nil) },
		})
	}
	task := func(p string) {
		add(p+"[].", taskFields, map[string]func(string){
			"resources":  resources,
			"checkpoint": func(p string) { add(p+".", checkpointFields, nil) },
			"outputs":    func(p string) { add(p+"[].", outputFields, nil) },
			"inputs":     func(p string) { add(p+"[].", inputFields, nil) },
		})
	}
	add("", jobFields, map[string]func(string){"tasks": task})
	return out
}
