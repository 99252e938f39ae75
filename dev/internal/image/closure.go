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

// continuation says what the line after a "|Kind: x" alternative belongs to.
type continuation int

const (
	contNone  continuation = iota
	contGroup              // the last recorded dependency group
	contSkip               // a group of a kind that is not followed
)

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
	p := dependsParser{g: depGraph{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case !strings.HasPrefix(line, " "):
			p.cur, p.cont, p.attach = stripArch(trimmed), contNone, false
			if _, ok := p.g[p.cur]; !ok {
				p.g[p.cur] = nil
			}
		case strings.HasPrefix(line, "    "):
			p.provider(stripArch(trimmed))
		default:
			if err := p.dependency(trimmed); err != nil {
				return nil, fmt.Errorf("apt-cache depends line %d %q: %w", n, line, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read apt-cache depends output: %w", err)
	}
	return p.g, nil
}

// dependsParser is the state of parseDepends between lines.
type dependsParser struct {
	g    depGraph
	cur  string       // the package whose dependencies follow
	cont continuation // what the next dependency line continues
	// attach says whether provider lines belong to the last recorded alternative.
	attach bool
}

// provider records a package that provides the dependency on the line above.
func (p *dependsParser) provider(name string) {
	if !p.attach {
		return // providers of a top-level virtual package or of a dependency not followed
	}
	deps := p.g[p.cur]
	group := deps[len(deps)-1]
	alt := &group[len(group)-1]
	alt.providers = append(alt.providers, name)
}

// dependency records a "[|]Kind: name" line.
func (p *dependsParser) dependency(trimmed string) error {
	if p.cur == "" {
		return fmt.Errorf("dependency before any package")
	}
	isAlt := strings.HasPrefix(trimmed, "|")
	kind, name, ok := strings.Cut(strings.TrimPrefix(trimmed, "|"), ": ")
	if !ok {
		return fmt.Errorf(`no "Kind: package"`)
	}
	skip := p.cont == contSkip || (kind != "Depends" && kind != "PreDepends")
	switch {
	case skip:
	case p.cont == contGroup:
		last := len(p.g[p.cur]) - 1
		p.g[p.cur][last] = append(p.g[p.cur][last], depAlt{name: stripArch(name)})
	default:
		p.g[p.cur] = append(p.g[p.cur], []depAlt{{name: stripArch(name)}})
	}
	p.attach = !skip
	p.cont = contNone
	if isAlt && skip {
		p.cont = contSkip
	} else if isAlt {
		p.cont = contGroup
	}
	return nil
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
