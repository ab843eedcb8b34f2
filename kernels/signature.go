package kernels

import (
	"regexp"
	"strings"

	"cudarepl/nvrtc"
)

// Signature is a __global__ kernel's declaration as a source writes it.
type Signature struct {
	Name    string
	Params  []string // each parameter's type, normalized: "const float*", "int"
	ExternC bool     // declared extern "C": its symbol is its name, not a C++ mangled one
}

// String writes the signature as "name(const float*, int)".
func (s Signature) String() string { return s.Name + "(" + strings.Join(s.Params, ", ") + ")" }

// Takes reports whether s's parameters are those of other, by type.
func (s Signature) Takes(other Signature) bool {
	return strings.Join(s.Params, ",") == strings.Join(other.Params, ",")
}

var (
	externC    = regexp.MustCompile(`extern\s+"C"\s*$`)
	externCAt  = regexp.MustCompile(`extern\s+"C"\s*\{`)
	comments   = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
	paramToken = regexp.MustCompile(`[A-Za-z_]\w*(?:::\w+)*|\*|&`)
)

// Signatures returns the __global__ kernels src declares, in file order,
// each with its parameter types and whether it is extern "C" (on its own
// line or inside an extern "C" { … } block). Templates are left out: they
// have no one signature.
func Signatures(src nvrtc.Source) []Signature {
	code := comments.ReplaceAllStringFunc(src.Code, func(c string) string {
		return strings.Repeat(" ", len(c)) // keep offsets
	})
	blocks := externBlocks(code)
	var out []Signature
	for _, m := range kernelDecl.FindAllStringSubmatchIndex(code, -1) {
		head := declHead(code, m[0])
		if strings.Contains(head, "template") {
			continue
		}
		open := m[1] - 1 // the parameter list's "("
		close := matching(code, open)
		if close < 0 {
			continue
		}
		sig := Signature{Name: code[m[2]:m[3]], Params: paramTypes(code[open+1 : close])}
		sig.ExternC = externC.MatchString(strings.TrimSpace(head))
		for _, b := range blocks {
			sig.ExternC = sig.ExternC || m[0] > b[0] && m[0] < b[1]
		}
		out = append(out, sig)
	}
	return out
}

// declHead is what precedes the __global__ at i in its declaration: the
// text back to the end of the previous statement or block.
func declHead(code string, i int) string {
	start := strings.LastIndexAny(code[:i], ";{}") + 1
	head := code[start:i]
	if j := strings.LastIndex(head, "\n#"); j >= 0 { // a preprocessor line ends a declaration too
		if k := strings.Index(head[j+1:], "\n"); k >= 0 {
			head = head[j+1+k:]
		}
	}
	return head
}

// externBlocks returns the spans of the extern "C" { … } blocks in code.
func externBlocks(code string) [][2]int {
	var out [][2]int
	for _, m := range externCAt.FindAllStringIndex(code, -1) {
		if end := matching(code, m[1]-1); end > 0 {
			out = append(out, [2]int{m[1], end})
		}
	}
	return out
}

// matching returns the index of the bracket that closes the one at open,
// or -1.
func matching(code string, open int) int {
	pairs := map[byte]byte{'(': ')', '{': '}', '[': ']'}
	want, depth := pairs[code[open]], 0
	for i := open; i < len(code); i++ {
		switch code[i] {
		case code[open]:
			depth++
		case want:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

var typeWords = map[string]bool{
	"const": true, "volatile": true, "unsigned": true, "signed": true, "short": true, "long": true,
	"int": true, "char": true, "float": true, "double": true, "bool": true, "void": true,
}

// paramTypes turns "const float* __restrict__ A, int n" into
// ["const float*", "int"]: names, restrict qualifiers, defaults and the
// constness of the pointer itself dropped, spacing made one way.
func paramTypes(list string) []string {
	if strings.TrimSpace(list) == "" || strings.TrimSpace(list) == "void" {
		return nil
	}
	var out []string
	for _, p := range splitTop(list) {
		p, _, _ = strings.Cut(p, "=")
		var toks []string
		for _, t := range paramToken.FindAllString(p, -1) {
			if t == "__restrict__" || t == "__restrict" || t == "restrict" {
				continue
			}
			toks = append(toks, t)
		}
		// The last word is the parameter's name unless it is part of the type.
		if n := len(toks); n > 1 && toks[n-1] != "*" && toks[n-1] != "&" && !typeWords[toks[n-1]] {
			toks = toks[:n-1]
		}
		// A const after the last * makes the pointer const, not what it points at.
		if n := len(toks); n > 1 && toks[n-1] == "const" && (toks[n-2] == "*" || toks[n-2] == "&") {
			toks = toks[:n-1]
		}
		out = append(out, strings.ReplaceAll(strings.ReplaceAll(strings.Join(toks, " "), " *", "*"), " &", "&"))
	}
	return out
}

// splitTop splits a parameter list at its top-level commas.
func splitTop(list string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range list {
		switch c {
		case '(', '<', '[':
			depth++
		case ')', '>', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, list[start:i])
				start = i + 1
			}
		}
	}
	return append(out, list[start:])
}
