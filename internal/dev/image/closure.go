package image

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
)

// depAlt is one alternative of a dependency: a package name, or a virtual package ("<name>")
// with the real packages that provide it.
type depAlt struct {
	name      string
	providers []string
}

// depGraph maps a package to its dependencies; each dependency is a list of alternatives
// (a | b | c), in the order Debian lists them.
type depGraph map[string][][]depAlt

// parseDepends parses the output of `apt-cache depends --recurse --no-recommends ...`:
//
//	lvm2
//	  Depends: libaio1
//	 |Depends: debconf
//	  Depends: <debconf-2.0>
//	    cdebconf
//	<python3:any>
//	    python3
//
// A line starting with "|" continues an alternative group with the next dependency line; deeper
// indented lines name packages that provide the dependency above them.
func parseDepends(out string) (depGraph, error) {
	g := depGraph{}
	var cur string
	continuing := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case !strings.HasPrefix(line, " "):
			cur = stripArch(trimmed)
			if _, ok := g[cur]; !ok {
				g[cur] = nil
			}
			continuing = false
		case strings.HasPrefix(line, "    "):
			deps := g[cur]
			if cur == "" || len(deps) == 0 {
				g[cur] = deps // provider lines of a virtual top-level package: nothing to record
				continue
			}
			group := deps[len(deps)-1]
			alt := &group[len(group)-1]
			alt.providers = append(alt.providers, stripArch(trimmed))
		default:
			if cur == "" {
				return nil, fmt.Errorf("apt-cache depends line %d: dependency before any package: %q", n, line)
			}
			isAlt := strings.HasPrefix(trimmed, "|")
			kind, name, ok := strings.Cut(strings.TrimPrefix(trimmed, "|"), ": ")
			if !ok {
				return nil, fmt.Errorf("apt-cache depends line %d: no \"Kind: package\": %q", n, line)
			}
			if kind != "Depends" && kind != "PreDepends" {
				continuing = isAlt
				continue
			}
			alt := depAlt{name: stripArch(name)}
			if continuing {
				last := len(g[cur]) - 1
				g[cur][last] = append(g[cur][last], alt)
			} else {
				g[cur] = append(g[cur], []depAlt{alt})
			}
			continuing = isAlt
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read apt-cache depends output: %w", err)
	}
	return g, nil
}

// stripArch drops an architecture qualifier: "libc6:amd64" → "libc6", "<python3:any>" →
// "<python3>".
func stripArch(name string) string {
	virtual := strings.HasPrefix(name, "<") && strings.HasSuffix(name, ">")
	name = strings.TrimSuffix(strings.TrimPrefix(name, "<"), ">")
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if virtual {
		return "<" + name + ">"
	}
	return name
}

// closure returns the sorted set of real packages reachable from roots. For each dependency it
// takes the first alternative that is not excluded (for a virtual package: its first provider
// that is not excluded); a dependency whose alternatives are all excluded is left out, which is
// how excluded packages (a Python only one optional script uses, debconf for maintainer
// scripts that never run) keep their own dependencies out too.
func (g depGraph) closure(roots []string, exclude map[string]string) ([]string, error) {
	seen := map[string]bool{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		deps, ok := g[p]
		if !ok {
			return nil, fmt.Errorf("package %s is not in the apt-cache depends output", p)
		}
		seen[p] = true
		for _, group := range deps {
			if pick := pickAlternative(group, exclude); pick != "" && !seen[pick] {
				queue = append(queue, pick)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

func pickAlternative(group []depAlt, exclude map[string]string) string {
	for _, alt := range group {
		if !strings.HasPrefix(alt.name, "<") {
			if _, ex := exclude[alt.name]; !ex {
				return alt.name
			}
			continue
		}
		for _, p := range alt.providers {
			if _, ex := exclude[p]; !ex {
				return p
			}
		}
	}
	return ""
}
