// Package fuse turns an elementwise expression a learner types, such as
// "sigmoid(a + b*c)", into one CUDA kernel: the runtime fusion of lesson 9.
// Parse reads the expression, Eval computes it in float64 for the check,
// and Kernel writes the kernel's source, which reads each input once and
// writes the output once, however many operations the expression has.
package fuse

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Limits on what Parse accepts, so that a typed expression stays a small
// kernel with a readable signature.
const (
	MaxLen    = 400 // characters
	MaxInputs = 8   // distinct named inputs
	MaxDepth  = 64  // nesting of parentheses, calls and signs
)

// Expr is a parsed expression over named fp32 inputs.
type Expr struct {
	src    string
	root   *node
	inputs []string // in order of first appearance
}

// node is one operation, number or input of the expression tree.
type node struct {
	op   string  // "num", "in", "+", "-", "*", "/", "neg", or a function's name
	num  float64 // for "num"
	in   int     // for "in": the index in Expr.inputs
	args []*node
}

// function is a function the expression may call.
type function struct {
	arity int
	eval  func(x []float64) float64
	cuda  string // a format for the fp32 code, with %[1]s, %[2]s for the arguments
}

// functions are the functions Parse knows, by name.
var functions = map[string]function{
	"abs":     {1, func(x []float64) float64 { return math.Abs(x[0]) }, "fabsf(%[1]s)"},
	"cos":     {1, func(x []float64) float64 { return math.Cos(x[0]) }, "cosf(%[1]s)"},
	"exp":     {1, func(x []float64) float64 { return math.Exp(x[0]) }, "expf(%[1]s)"},
	"log":     {1, func(x []float64) float64 { return math.Log(x[0]) }, "logf(%[1]s)"},
	"max":     {2, func(x []float64) float64 { return math.Max(x[0], x[1]) }, "fmaxf(%[1]s, %[2]s)"},
	"min":     {2, func(x []float64) float64 { return math.Min(x[0], x[1]) }, "fminf(%[1]s, %[2]s)"},
	"pow":     {2, func(x []float64) float64 { return math.Pow(x[0], x[1]) }, "powf(%[1]s, %[2]s)"},
	"relu":    {1, func(x []float64) float64 { return math.Max(x[0], 0) }, "fmaxf(%[1]s, 0.0f)"},
	"sigmoid": {1, func(x []float64) float64 { return 1 / (1 + math.Exp(-x[0])) }, "(1.0f / (1.0f + expf(-(%[1]s))))"},
	"sin":     {1, func(x []float64) float64 { return math.Sin(x[0]) }, "sinf(%[1]s)"},
	"sqrt":    {1, func(x []float64) float64 { return math.Sqrt(x[0]) }, "sqrtf(%[1]s)"},
	"tanh":    {1, func(x []float64) float64 { return math.Tanh(x[0]) }, "tanhf(%[1]s)"},
}

// Functions lists the names of the functions an expression may call, sorted.
func Functions() []string {
	names := make([]string, 0, len(functions))
	for name := range functions {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// SyntaxError is what Parse returns for an expression it cannot read:
// where (Col, 1-based, in characters) and what.
type SyntaxError struct {
	Src string
	Col int
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("fuse: column %d of %q: %s", e.Col, e.Src, e.Msg)
}

// Parse reads src: numbers, named inputs (letters, digits and _, starting
// with a letter), + - * / with the usual precedence, unary minus,
// parentheses, and calls of Functions. Names of functions cannot name
// inputs.
func Parse(src string) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &SyntaxError{Src: src, Col: 1, Msg: "the expression is empty: try sigmoid(a + b*c)"}
	}
	if n := len([]rune(src)); n > MaxLen {
		return nil, &SyntaxError{Src: string([]rune(src)[:40]) + "…", Col: MaxLen + 1, Msg: fmt.Sprintf("the expression is %d characters long; %d is the most", n, MaxLen)}
	}
	p := &parser{src: src, rs: []rune(src), e: &Expr{src: src}}
	root, err := p.sum(0)
	if err != nil {
		return nil, err
	}
	if p.skip(); p.pos < len(p.rs) {
		return nil, p.fail("unexpected %q after a complete expression", string(p.rs[p.pos]))
	}
	p.e.root = root
	return p.e, nil
}

// parser is a recursive-descent reader of one expression.
type parser struct {
	src string
	rs  []rune
	pos int
	e   *Expr
}

func (p *parser) fail(format string, args ...any) error {
	return &SyntaxError{Src: p.src, Col: p.pos + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skip() {
	for p.pos < len(p.rs) && (p.rs[p.pos] == ' ' || p.rs[p.pos] == '\t') {
		p.pos++
	}
}

// peek skips blanks and returns the next rune, or 0 at the end.
func (p *parser) peek() rune {
	p.skip()
	if p.pos < len(p.rs) {
		return p.rs[p.pos]
	}
	return 0
}

// sum is term (('+' | '-') term)*.
func (p *parser) sum(depth int) (*node, error) { return p.binary(depth, "+-", p.term) }

// term is unary (('*' | '/') unary)*.
func (p *parser) term(depth int) (*node, error) { return p.binary(depth, "*/", p.unary) }

// binary is one level of left-associative operators: next (op next)*,
// with op one of ops.
func (p *parser) binary(depth int, ops string, next func(int) (*node, error)) (*node, error) {
	left, err := next(depth)
	if err != nil {
		return nil, err
	}
	for r := p.peek(); r != 0 && strings.ContainsRune(ops, r); r = p.peek() {
		p.pos++
		right, err := next(depth)
		if err != nil {
			return nil, err
		}
		left = &node{op: string(r), args: []*node{left, right}}
	}
	return left, nil
}

// unary is '-' unary, '+' unary, or a primary.
func (p *parser) unary(depth int) (*node, error) {
	if depth >= MaxDepth {
		return nil, p.fail("nested more than %d deep", MaxDepth)
	}
	switch p.peek() {
	case '-':
		p.pos++
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{op: "neg", args: []*node{x}}, nil
	case '+':
		p.pos++
		return p.unary(depth + 1)
	}
	return p.primary(depth)
}

// primary is a number, an input, a call, or a parenthesised sum.
func (p *parser) primary(depth int) (*node, error) {
	r := p.peek()
	switch {
	case r == 0:
		return nil, p.fail("the expression ends where a value is due")
	case r == '(':
		p.pos++
		x, err := p.sum(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, p.fail("a ')' is due here")
		}
		p.pos++
		return x, nil
	case r == '.' || r >= '0' && r <= '9':
		return p.number()
	case isLetter(r):
		return p.name(depth)
	}
	return nil, p.fail("unexpected %q where a value is due", string(r))
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

func (p *parser) number() (*node, error) {
	start := p.pos
	for p.pos < len(p.rs) && (p.rs[p.pos] >= '0' && p.rs[p.pos] <= '9' || p.rs[p.pos] == '.') {
		p.pos++
	}
	// An exponent: e or E, a sign, digits.
	if p.pos < len(p.rs) && (p.rs[p.pos] == 'e' || p.rs[p.pos] == 'E') {
		q := p.pos + 1
		if q < len(p.rs) && (p.rs[q] == '+' || p.rs[q] == '-') {
			q++
		}
		if q < len(p.rs) && p.rs[q] >= '0' && p.rs[q] <= '9' {
			for p.pos = q; p.pos < len(p.rs) && p.rs[p.pos] >= '0' && p.rs[p.pos] <= '9'; p.pos++ {
			}
		}
	}
	text := string(p.rs[start:p.pos])
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(float32Of(v), 0) {
		p.pos = start
		return nil, p.fail("%q is not a number an fp32 kernel can hold", text)
	}
	return &node{op: "num", num: v}, nil
}

func float32Of(v float64) float64 { return float64(float32(v)) }

// name is an input, or a function's name followed by its arguments.
func (p *parser) name(depth int) (*node, error) {
	start := p.pos
	for p.pos < len(p.rs) && (isLetter(p.rs[p.pos]) || p.rs[p.pos] == '_' || p.rs[p.pos] >= '0' && p.rs[p.pos] <= '9') {
		p.pos++
	}
	name := string(p.rs[start:p.pos])
	fn, isFunc := functions[name]
	if p.peek() != '(' {
		if isFunc {
			p.pos = start
			return nil, p.fail("%s is a function: call it, as %s(x)", name, name)
		}
		return p.input(name, start)
	}
	if !isFunc {
		p.pos = start
		return nil, p.fail("unknown function %q (there are %s)", name, strings.Join(Functions(), ", "))
	}
	p.pos++ // the '('
	n := &node{op: name}
	for {
		arg, err := p.sum(depth + 1)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, arg)
		if p.peek() != ',' {
			break
		}
		p.pos++
	}
	if p.peek() != ')' {
		return nil, p.fail("a ')' or ',' is due here, in the call of %s", name)
	}
	if len(n.args) != fn.arity {
		p.pos = start
		return nil, p.fail("%s takes %d argument%s, not %d", name, fn.arity, plural(fn.arity), len(n.args))
	}
	p.pos++
	return n, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// input is the named input, numbered on its first appearance.
func (p *parser) input(name string, start int) (*node, error) {
	if i := slices.Index(p.e.inputs, name); i >= 0 {
		return &node{op: "in", in: i}, nil
	}
	if len(p.e.inputs) == MaxInputs {
		p.pos = start
		return nil, p.fail("%s would be input %d; %d is the most", name, MaxInputs+1, MaxInputs)
	}
	p.e.inputs = append(p.e.inputs, name)
	return &node{op: "in", in: len(p.e.inputs) - 1}, nil
}

// Inputs returns the names of the inputs, in the order they first appear:
// the order of the kernel's parameters and of Eval's values.
func (e *Expr) Inputs() []string { return slices.Clone(e.inputs) }

// String returns the expression as typed.
func (e *Expr) String() string { return e.src }

// Eval computes the expression in float64, with x[i] the value of input i.
func (e *Expr) Eval(x []float64) float64 { return e.root.eval(x) }

func (n *node) eval(x []float64) float64 {
	switch n.op {
	case "num":
		return n.num
	case "in":
		return x[n.in]
	}
	args := make([]float64, len(n.args))
	for i, a := range n.args {
		args[i] = a.eval(x)
	}
	return Apply(n.op, args)
}

// Apply computes one operation of an expression in float64: "+", "-",
// "*", "/" and "neg" on x, or a function of Functions. It panics for any
// other op, or the wrong number of arguments.
func Apply(op string, x []float64) float64 {
	switch op {
	case "neg":
		return -x[0]
	case "+":
		return x[0] + x[1]
	case "-":
		return x[0] - x[1]
	case "*":
		return x[0] * x[1]
	case "/":
		return x[0] / x[1]
	}
	f, ok := functions[op]
	if !ok || len(x) != f.arity {
		panic(fmt.Sprintf("fuse: Apply(%q) of %d arguments", op, len(x)))
	}
	return f.eval(x)
}

// Ops counts the expression's arithmetic operations and function calls on
// its inputs (those on numbers alone are done before any kernel runs):
// what the unfused way launches a kernel for, each.
func (e *Expr) Ops() int { return e.root.ops() }

func (n *node) ops() int {
	if _, ok := n.constant(); ok || n.op == "in" {
		return 0
	}
	c := 1
	for _, a := range n.args {
		c += a.ops()
	}
	return c
}

// BytesPerElement is what the fused kernel moves for each element: each
// input read once and the output written once, fp32.
func (e *Expr) BytesPerElement() int { return 4 * (len(e.inputs) + 1) }

// Kernel returns the CUDA C source of one kernel, name, that computes the
// expression for n elements, a grid-stride loop over
//
//	extern "C" __global__ void name(const float* x0, …, float* out, long long n)
//
// with one pointer per input in the order of Inputs. The inputs are
// renamed x0, x1, … in the code, so that no name a learner types can
// collide with C's.
func (e *Expr) Kernel(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s: %s, fused: each input read once, the output written once.\n", name, e.src)
	fmt.Fprintf(&b, "extern \"C\" __global__ void %s(", name)
	for i, in := range e.inputs {
		fmt.Fprintf(&b, "const float* __restrict__ x%d /* %s */, ", i, in)
	}
	b.WriteString("float* __restrict__ out, long long n) {\n")
	b.WriteString("    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n")
	for i := range e.inputs {
		fmt.Fprintf(&b, "        float v%d = x%d[i];\n", i, i)
	}
	fmt.Fprintf(&b, "        out[i] = %s;\n", e.root.cuda())
	b.WriteString("    }\n}\n")
	return b.String()
}

func (n *node) cuda() string {
	switch n.op {
	case "num":
		return cudaFloat(n.num)
	case "in":
		return fmt.Sprintf("v%d", n.in)
	}
	args := make([]string, len(n.args))
	for i, a := range n.args {
		args[i] = a.cuda()
	}
	return cudaOp(n.op, args)
}

// cudaOp writes op applied to operands, fp32 CUDA C each.
func cudaOp(op string, operands []string) string {
	switch op {
	case "neg":
		return "(-" + operands[0] + ")"
	case "+", "-", "*", "/":
		return "(" + operands[0] + " " + op + " " + operands[1] + ")"
	}
	args := make([]any, len(operands))
	for i, o := range operands {
		args[i] = o
	}
	return fmt.Sprintf(functions[op].cuda, args...)
}

// cudaFloat writes v as an fp32 literal: "2.0f", "1e-05f".
func cudaFloat(v float64) string {
	s := strconv.FormatFloat(float64(float32(v)), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f"
}

// Builder builds an expression in another form, node by node, the
// arguments of each before it: lesson 9 builds the same expression as a
// cuDNN pointwise graph.
type Builder[T any] interface {
	Number(v float64) (T, error)
	Input(i int) (T, error) // the i-th of Inputs
	// Apply is an operation on built arguments: "+", "-", "*", "/",
	// "neg", or a function of Functions.
	Apply(op string, args []T) (T, error)
}

// Build builds e with b.
func Build[T any](e *Expr, b Builder[T]) (T, error) { return build(e.root, b) }

func build[T any](n *node, b Builder[T]) (T, error) {
	switch n.op {
	case "num":
		return b.Number(n.num)
	case "in":
		return b.Input(n.in)
	}
	args := make([]T, len(n.args))
	for i, a := range n.args {
		var err error
		if args[i], err = build(a, b); err != nil {
			return args[i], err
		}
	}
	return b.Apply(n.op, args)
}

// Stage is one kernel of the unfused way to compute an expression: one
// operation, its operands read from memory and its result written there.
type Stage struct {
	Kernel string   // the kernel's name in Unfused's source
	Op     string   // the operation, as Apply names it
	Reads  []string // what each pointer parameter reads, in order: "x0"… the inputs, "t0"… earlier results
	Writes string   // "t<k>", or "out" for the last stage
}

// Bytes is what the stage moves for each element, fp32.
func (s Stage) Bytes() int { return 4 * (len(s.Reads) + 1) }

// StagesBytes is what stages move for each element, all together.
func StagesBytes(stages []Stage) int {
	b := 0
	for _, s := range stages {
		b += s.Bytes()
	}
	return b
}

// Unfused returns the source of one kernel per operation of the
// expression, named prefix0, prefix1…, each of the form
//
//	extern "C" __global__ void prefixK(const float* p0, …, float* out, long long n)
//
// and the stages in the order they must run: what a framework without
// fusion launches, every intermediate result a trip through memory.
// Operations on numbers alone are done here, so "2*3*a" is one stage; an
// expression with no operation on an input ("a") is one copy.
func (e *Expr) Unfused(prefix string) (string, []Stage) {
	var b strings.Builder
	var stages []Stage
	var emit func(n *node) (string, bool) // what the node is in a kernel: a value name to read, or a literal
	emit = func(n *node) (string, bool) {
		switch n.op {
		case "num":
			return cudaFloat(n.num), false
		case "in":
			return fmt.Sprintf("x%d", n.in), true
		}
		if c, ok := n.constant(); ok {
			return cudaFloat(c), false
		}
		st := Stage{Op: n.op}
		args := make([]string, len(n.args))
		for i, a := range n.args {
			name, mem := emit(a)
			if !mem {
				args[i] = name
				continue
			}
			args[i] = fmt.Sprintf("p%d[i]", len(st.Reads))
			st.Reads = append(st.Reads, name)
		}
		st.Kernel, st.Writes = fmt.Sprintf("%s%d", prefix, len(stages)), fmt.Sprintf("t%d", len(stages)) // after its operands' stages
		writeStage(&b, st, cudaOp(n.op, args))
		stages = append(stages, st)
		return st.Writes, true
	}
	if name, mem := emit(e.root); len(stages) == 0 {
		st := Stage{Kernel: prefix + "0", Op: "copy", Writes: "t0"}
		value := name
		if mem {
			st.Reads, value = []string{name}, "p0[i]"
		}
		writeStage(&b, st, value)
		stages = append(stages, st)
	}
	stages[len(stages)-1].Writes = "out"
	return b.String(), stages
}

// writeStage writes the kernel of st, which stores value.
func writeStage(b *strings.Builder, st Stage, value string) {
	fmt.Fprintf(b, "// %s: %s, alone: its operands read from memory, its result written back.\n", st.Kernel, st.Op)
	fmt.Fprintf(b, "extern \"C\" __global__ void %s(", st.Kernel)
	for i := range st.Reads {
		fmt.Fprintf(b, "const float* __restrict__ p%d, ", i)
	}
	b.WriteString("float* __restrict__ out, long long n) {\n")
	b.WriteString("    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n")
	fmt.Fprintf(b, "        out[i] = %s;\n}\n\n", value)
}

// constant reports whether the node involves no input, and its value then,
// in fp32 as a kernel would hold it.
func (n *node) constant() (float64, bool) {
	switch n.op {
	case "num":
		return n.num, true
	case "in":
		return 0, false
	}
	x := make([]float64, len(n.args))
	for i, a := range n.args {
		v, ok := a.constant()
		if !ok {
			return 0, false
		}
		x[i] = v
	}
	return float64(float32(Apply(n.op, x))), true
}
