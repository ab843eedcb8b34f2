package precision

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"cudarepl/blas"
	"cudarepl/gpu"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

func TestFormats(t *testing.T) {
	for _, f := range allFormats() {
		got, err := formatOf(f.name)
		if err != nil || got.name != f.name {
			t.Errorf("formatOf(%q) = %v, %v", f.name, got, err)
		}
	}
	if _, err := formatOf("fp4"); err == nil || !strings.Contains(err.Error(), `no variant "fp4"`) {
		t.Errorf("formatOf(fp4) = %v", err)
	}
}

// TestFP8NeedsMultiplesOf16 is the refusal, and the small check size that
// lets FP8 run at all where only small sizes run (under the sanitizer).
func TestFP8NeedsMultiplesOf16(t *testing.T) {
	p := problem()
	var fp8 lessons.Impl
	for _, im := range p.Impls {
		if im.Name == "fp8 e4m3" {
			fp8 = im
		}
	}
	if err := fp8.Requires(lessons.Size{1000, 1003, 517}); err == nil {
		t.Error("fp8 accepts 1000×1003×517")
	}
	small := 0
	for _, s := range p.CheckSizes {
		if fp8.Requires(s) == nil && p.Work(s) < 1e6 {
			small++
		}
	}
	if small == 0 {
		t.Error("no small check size runs fp8")
	}
}

func TestMemoryTable(t *testing.T) {
	var out bytes.Buffer
	if err := memoryTable(lessontest.ReplayEnv(t, &out), nil, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fp32       1/8/23", "64", "fp16", "65504", "fp8 e4m3", "448"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("memory table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRoundTF32: TF32 to nearest keeps 10 mantissa bits, ties to even;
// toward zero it drops the other 13.
func TestRoundTF32(t *testing.T) {
	tests := []struct {
		in, want float32
	}{
		{1, 1},
		{1 + 1.0/2048, 1},            // a tie, to the even 1
		{1 + 3.0/2048, 1 + 2.0/1024}, // a tie, to the even 1 + 2⁻⁹
		{1 + 1.0/2048 + 1.0/(1<<20), 1 + 1.0/1024},
		{-(1 + 1.0/1024 + 1.0/4096), -(1 + 1.0/1024)},
	}
	for _, tt := range tests {
		if got := roundTF32(tt.in); got != tt.want {
			t.Errorf("roundTF32(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := truncTF32(1 + 1.0/1024 + 1.0/2048 + 1.0/4096); got != 1+1.0/1024 {
		t.Errorf("truncTF32 = %v, want 1 + 2⁻¹⁰", got)
	}
}

// TestLimits: each format's limits, decoded from its bits, are the
// figures the prose quotes.
func TestLimits(t *testing.T) {
	tests := []struct {
		name                                string
		largest, normal, subnormal, spacing float64
	}{
		{"fp32", math.MaxFloat32, 0x1p-126, 0x1p-149, 0x1p-23},
		{"tf32", (2 - 0x1p-10) * 0x1p127, 0x1p-126, 0x1p-136, 0x1p-10},
		{"fp16", 65504, 0x1p-14, 0x1p-24, 0x1p-10},
		{"bf16", (2 - 0x1p-7) * 0x1p127, 0x1p-126, 0x1p-133, 0x1p-7},
		{fp8, 448, 0x1p-6, 0x1p-9, 0x1p-3},
	}
	for _, tt := range tests {
		got := limitsOf(tt.name)
		want := limits{tt.largest, tt.normal, tt.subnormal, tt.spacing}
		if got != want {
			t.Errorf("limitsOf(%s) = %+v, want %+v", tt.name, got, want)
		}
	}
}

// TestRangeFigures: what the Range step's tables show, as the prose
// quotes it.
func TestRangeFigures(t *testing.T) {
	tests := []struct {
		desc string
		got  float64
		want string
	}{
		{"70000 in fp16", float64(round16(70000)), "+Inf"},
		{"70000 in bf16", float64(roundBF16(70000)), "7.014e+04"},
		{"70000 in fp8", float64(round8(70000)), "448"},
		{"1e-7 in fp16", float64(round16(1e-7)), "1.192e-07"},
		{"1e-8 in fp16", float64(round16(1e-8)), "0"},
		{"1e-5 in fp8", float64(round8(1e-5)), "0"},
		{"1e-9 in fp16", scaled16(1e-9, 1), "0"},
		{"1e-9 in fp16 × 2¹⁶", scaled16(1e-9, 1<<16), "1e-09"},
		{"2 in fp16 × 2¹⁶", scaled16(2, 1<<16), "+Inf"},
		{"0.1 in fp16 × 2²⁴", scaled16(0.1, 1<<24), "+Inf"},
		{"0.1 in fp16 × 2¹⁶", scaled16(0.1, 1<<16), "0.09998"},
	}
	for _, tt := range tests {
		if got := fmt.Sprintf("%.4g", tt.got); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.desc, got, tt.want)
		}
	}
}

// TestErrorModel: rounding the inputs alone gives what the H100
// measured for TF32 rounded to nearest, not toward zero, and the error
// of each format grows as its mantissa shrinks.
func TestErrorModel(t *testing.T) {
	got := map[string]modelled{}
	for i, m := range modelErrors(lessons.Size{1024, 1008, 528}) {
		got[roundings[i].name] = m
	}
	if got["fp32"].inputs != 0 || got["fp32"].output > 1e-7 {
		t.Errorf("fp32: %+v, want exact inputs and an output rounding below 1e-7", got["fp32"])
	}
	// Recorded on the H100 at this size: TF32 2.61e-4.
	if e := got["tf32, to nearest"].inputs; math.Abs(e-2.61e-4)/2.61e-4 > 0.05 {
		t.Errorf("tf32 to nearest: %.3g, want within 5 %% of the 2.61e-4 measured", e)
	}
	if e := got["tf32, toward zero"].inputs; e < 2*2.61e-4 {
		t.Errorf("tf32 toward zero: %.3g, want more than twice the 2.61e-4 measured", e)
	}
	// The figures the prose quotes, computed from fixed seeds.
	odd := modelErrors(lessons.Size{1000, 1003, 517})
	quoted := []struct {
		desc string
		got  float64
		want string
	}{
		{"fp16, inputs and output", got["fp16"].output, "3.35e-04"},
		{"fp16, inputs", got["fp16"].inputs, "2.64e-04"},
		{"fp8, inputs and output", got[fp8].output, "3.37e-02"},
		{"fp8, inputs", got[fp8].inputs, "3.37e-02"},
		{"tf32 toward zero", got["tf32, toward zero"].inputs, "6.94e-04"},
		{"fp32, output", got["fp32"].output, "2.45e-08"},
		{"bf16 at 1000×1003×517", odd[4].output, "2.65e-03"},
	}
	for _, q := range quoted {
		if s := errCell(q.got); s != q.want {
			t.Errorf("%s = %s, want %s as the prose says", q.desc, s, q.want)
		}
	}
	for _, pair := range [][2]string{{"fp16", "bf16"}, {"bf16", fp8}} {
		if got[pair[0]].output >= got[pair[1]].output {
			t.Errorf("%s's error %.3g is not below %s's %.3g", pair[0], got[pair[0]].output, pair[1], got[pair[1]].output)
		}
	}
}

// dotSerial is a correct kernel that sums each row in one fp32 running
// sum, from the first column to the last, and rounds it to fp16: the
// longest chain of additions an fp32 kernel can make.
func dotSerial(x, y []uint16, rows, n int) []float64 {
	out := make([]float64, rows)
	for r := range rows {
		var acc float32
		for j := r * n; j < (r+1)*n; j++ {
			acc = sumFP32(acc, x[j], y[j])
		}
		out[r] = float64(round16(acc))
	}
	return out
}

// TestDotCheckSizes models, on the inputs the check gets at each of its
// sizes, what the course's kernel, a serial fp32 sum, the starter and each
// planted mistake write, and holds the check to its verdicts: the fp32
// sums pass every size within the tolerance, and each mistake fails where
// the prose and the Planted list say, by a clear margin.
func TestDotCheckSizes(t *testing.T) {
	p := dotProblem()
	type verdict struct {
		worst float64         // the largest error ÷ tolerance over the sizes
		first string          // the first failure's message
		ratio map[int]float64 // by n·dotKinds + kind: a row's error ÷ tolerance
	}
	kernels := map[string]func(x, y []uint16, rows, n int) []float64{
		"dot_h_v1": func(x, y []uint16, rows, n int) []float64 { return dotModel(x, y, rows, n, sumFP32) },
		"serial":   dotSerial,
		"starter": func(x, y []uint16, rows, n int) []float64 {
			return dotModel(x, y, rows, n, func(float32, uint16, uint16) float32 { return 0 })
		},
		"half_acc":   func(x, y []uint16, rows, n int) []float64 { return dotModel(x, y, rows, n, sumFP16) },
		"half_prod":  func(x, y []uint16, rows, n int) []float64 { return dotModel(x, y, rows, n, sumProduct16) },
		"bits_float": func(x, y []uint16, rows, n int) []float64 { return dotModel(x, y, rows, n, sumBits) },
	}
	got := map[string]*verdict{}
	for name := range kernels {
		got[name] = &verdict{ratio: map[int]float64{}}
	}
	for _, s := range p.CheckSizes {
		rows, n := dotShape(s)
		x, y := dotInput(rows, n, dotSeed(rows, n))
		want, abs := dotReference(x, y, rows, n)
		for name, k := range kernels {
			out := k(x, y, rows, n)
			st, err := dotCompare(out, want, abs, n)
			v := got[name]
			v.worst = math.Max(v.worst, st.MaxRelErr/st.Tol)
			if err != nil && v.first == "" {
				v.first = fmt.Sprintf("%s: %v", dotLabel(s), err)
			}
			for r := range rows {
				key := n*dotKinds + r%dotKinds
				v.ratio[key] = math.Max(v.ratio[key], math.Abs(out[r]-want[r])/dotScale(abs[r])/dotTol(n))
			}
		}
	}
	for _, name := range []string{"dot_h_v1", "serial"} {
		if v := got[name]; v.first != "" || fmt.Sprintf("%.2f", v.worst) != "0.80" {
			t.Errorf("%s: worst %.2f of the tolerance, first failure %q; want every size passed, at most 0.80 of it as the prose says", name, v.worst, v.first)
		}
	}
	fails := []struct {
		name, want string
		n, kind    int     // a row it must fail on
		margin     float64 // by at least this many times the tolerance
	}{
		{"starter", "3 rows of 1: check: out[0] = 0, want", 1, dotSigned, 100},
		{"half_acc", "6 rows of 1000: check: out[2] = 0, want", 1 << 20, dotPositive, 50},
		{"half_acc", "", 1000, dotTiny, 100},
		{"half_prod", "6 rows of 1000: check: out[2] = 0, want", 1000, dotTiny, 100},
		{"bits_float", "3 rows of 1: check: out[0] = +Inf", 1, dotSigned, math.Inf(1)},
	}
	for _, f := range fails {
		v := got[f.name]
		if !strings.Contains(v.first, f.want) {
			t.Errorf("%s first fails with %q, want it to say %q", f.name, v.first, f.want)
		}
		if r := v.ratio[f.n*dotKinds+f.kind]; r < f.margin {
			t.Errorf("%s on a %s row of %d: %.3g of the tolerance, want at least %g", f.name, dotKindNames[f.kind], f.n, r, f.margin)
		}
	}
	// What sinks each mistake: the fp16 running sum passes the positive
	// rows up to 2¹⁶ and fails them beyond; the fp16 product passes every
	// row but the tiny ones.
	for _, n := range []int{1, 3, 1000, 4099, 1 << 16} {
		if r := got["half_acc"].ratio[n*dotKinds+dotPositive]; r > 1 {
			t.Errorf("fp16 running sums fail a positive row of %d (%.3g of the tolerance); want only the longer ones to", n, r)
		}
	}
	for key, r := range got["half_prod"].ratio {
		if key%dotKinds != dotTiny && r > 1 {
			t.Errorf("fp16 products fail a %s row of %d (%.3g of the tolerance); want only the tiny rows to", dotKindNames[key%dotKinds], key/dotKinds, r)
		}
	}
	for _, name := range []string{"dot_h_v1", "serial", "half_acc", "half_prod"} {
		v := got[name]
		t.Logf("%-9s worst %8.3g of the tolerance; positive row of 2²⁰ %.3g; first failure: %s", name, v.worst, v.ratio[(1<<20)*dotKinds+dotPositive], v.first)
	}
}

// TestSummingFigures: what the step "Summing in FP16" shows from its
// model, as the prose quotes it.
func TestSummingFigures(t *testing.T) {
	fp16At := map[int]float64{}
	for _, r := range summingModel() {
		if r.kind == dotPositive {
			fp16At[r.n] = r.model[1]
		}
		if r.kind == dotSigned && r.model[1] > dotTol(r.n) {
			t.Errorf("fp16 sums fail a signed row of %d: %.3g", r.n, r.model[1])
		}
		if r.kind == dotTiny && r.n >= 1<<10 && r.model[1] <= dotTol(r.n) {
			t.Errorf("fp16 sums pass a tiny row of %d: %.3g", r.n, r.model[1])
		}
		if r.model[0] > dotTol(r.n) {
			t.Errorf("fp32 sums fail a %s row of %d: %.3g", dotKindNames[r.kind], r.n, r.model[0])
		}
	}
	fp32At := map[int]float64{}
	for _, r := range summingModel() {
		if r.kind == dotPositive {
			fp32At[r.n] = r.model[0]
		}
	}
	for n, e := range fp16At {
		if a, b := fmt.Sprintf("%.1e", e), fmt.Sprintf("%.1e", fp32At[n]); n <= 1<<14 && a != b {
			t.Errorf("positive row of %d: fp16 sums %s, fp32 sums %s; want the same to the digits shown, as the prose says", n, a, b)
		}
		if n <= 1<<16 && e > dotTol(n) {
			t.Errorf("fp16 sums fail a positive row of %d: %.3g, past %.3g", n, e, dotTol(n))
		}
	}
	quoted := []struct {
		desc, got, want string
	}{
		{"fp16 sums, positive, 2¹⁶", fmt.Sprintf("%.1e", fp16At[1<<16]), "5.0e-04"},
		{"… as a multiple of fp32 sums'", fmt.Sprintf("%.0f", fp16At[1<<16]/fp32At[1<<16]), "54"},
		{"fp16 sums, positive, 2¹⁸", fmt.Sprintf("%.1e", fp16At[1<<18]), "7.3e-03"},
		{"fp16 sums, positive, 2²⁰", fmt.Sprintf("%.1e", fp16At[1<<20]), "7.3e-02"},
		{"… as a share of the tolerance", fmt.Sprintf("%.1f", fp16At[1<<20]/dotTol(1<<20)), "74.5"},
		{"the worst-case bound n·u at 2¹⁸", fmt.Sprintf("%.1e", math.Ldexp(1<<18, -24)), "1.6e-02"},
	}
	if worst := math.Ldexp(1<<18, -24); fp16At[1<<18] >= worst {
		t.Errorf("fp16 sums of a positive row of 2¹⁸: %.3g, not within the worst-case bound %.3g as the prose says", fp16At[1<<18], worst)
	}
	x, y := dotInput(dotKinds, 1<<20, dotSeed(dotKinds, 1<<20))
	want, _ := dotReference(x, y, dotKinds, 1<<20)
	out := dotModel(x, y, dotKinds, 1<<20, sumFP16)
	quoted = append(quoted, struct{ desc, got, want string }{"the positive row of 2²⁰ in fp16 sums, and exactly",
		fmt.Sprintf("%.0f for %.0f", out[dotPositive], want[dotPositive]), "30384 for 32769"})
	for _, q := range quoted {
		if q.got != q.want {
			t.Errorf("%s: %s, want %s as the prose says", q.desc, q.got, q.want)
		}
	}
}

// TestLayoutTable: each variant's rate as a share of fp16's at its size,
// the median of the rounds' ratios, and fp8 fast's as a share of fp8's.
func TestLayoutTable(t *testing.T) {
	if layoutTable(nil) != nil {
		t.Error("a table with nothing timed")
	}
	at := func(v string, rounds ...float64) lessons.Result {
		return lessons.Result{Variant: v, Size: "4096×4096×4096", Throughput: rounds[1], Rounds: rounds}
	}
	rs := []lessons.Result{at(fp16, 700, 740, 760), at(fp16TN.name, 693, 740, 768), at(fp8, 1120, 1184, 1200),
		at(fp8Fast.name, 1232, 1302, 1320)}
	var b bytes.Buffer
	layoutTable(rs).Write(&b)
	rows := map[string]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		for _, v := range []string{fp16, fp16TN.name, fp8, fp8Fast.name} {
			if strings.HasPrefix(line, v+" ") && !strings.HasPrefix(line, v+" fast") && !strings.HasPrefix(line, v+" tn") {
				rows[v] = line
			}
		}
	}
	tests := []struct {
		variant string
		want    []string
	}{
		{fp16TN.name, []string{"1.00 (0.99–1.01)", "—"}},
		{fp8, []string{"1.60 (1.58–1.60)", "  1"}},
		{fp8Fast.name, []string{"1.76 (1.74–1.76)", "1.10 (1.10–1.10)"}},
	}
	for _, tt := range tests {
		for _, want := range tt.want {
			if !strings.Contains(rows[tt.variant], want) {
				t.Errorf("%s's row lacks %q:\n%s", tt.variant, want, b.String())
			}
		}
	}
}

// TestLayoutErrors: each variant's two errors at each size it was checked
// at, on one row, and a dash for one not recorded.
func TestLayoutErrors(t *testing.T) {
	if layoutErrors(nil) != nil {
		t.Error("a table with nothing checked")
	}
	long := layoutChecks[1].String()
	checks := []lessons.Result{
		{Variant: fp8, Size: modelSize.String(), MaxRelErr: 3.35e-2, Passed: true},
		{Variant: fp8, Size: modelSize.String() + roundedLabel, MaxRelErr: 1.2e-3, Passed: true},
		{Variant: fp8Fast.name, Size: modelSize.String(), MaxRelErr: 3.36e-2, Passed: true},
		{Variant: fp8Fast.name, Size: long, MaxRelErr: 0.2, Passed: false},
		{Variant: fp16, Size: long, Detail: "cublasGemmEx failed"},
		{Variant: fp16, Size: long + roundedLabel, Detail: "cublasGemmEx failed"},
	}
	var b bytes.Buffer
	layoutErrors(checks).Write(&b)
	out := b.String()
	tests := []struct{ row, want string }{
		{fp8 + " ", "3.35e-02"},
		{fp8 + " ", "1.20e-03"},
		{fp8Fast.name + " ", "3.36e-02"},
		{fp8Fast.name + " ", "2.00e-01 (failed)"},
	}
	for _, tt := range tests {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, tt.row) && strings.Contains(line, tt.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no row of %q with %q:\n%s", tt.row, tt.want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, fp16+" ") && strings.Count(line, "failed") != 2 {
			t.Errorf("fp16's row at %s does not say twice that it failed: %q", long, line)
		}
	}
	if n := strings.Count(out, "—"); n != 2 {
		t.Errorf("%d dashes, want 2 (fp8 fast's rounded errors, both unrecorded):\n%s", n, out)
	}
}

// TestFastAccumOps: fp8 fast is fp8's product with FastAccum set, and
// nothing else changed; every other variant leaves it off.
func TestFastAccumOps(t *testing.T) {
	c := &pcase{m: 32, n: 48, k: 64, dc: 3, dev: map[string][2]gpu.DevicePtr{}}
	for _, f := range allFormats() { // already "uploaded", so that Ops needs no GPU
		key := f.in.String()
		if f.transB {
			key += " tn"
		}
		c.dev[key] = [2]gpu.DevicePtr{1, 2}
	}
	gemm := func(name string) blas.GEMM {
		ops, err := c.Ops(lessons.Impl{Name: name}, gpu.Kernel{}, 0)
		if err != nil || len(ops) != 1 {
			t.Fatalf("Ops(%s) = %v, %v", name, ops, err)
		}
		return ops[0].(blas.GEMM)
	}
	for _, f := range allFormats() {
		if g := gemm(f.name); g.FastAccum != (f.name == fp8Fast.name) {
			t.Errorf("%s: FastAccum %v", f.name, g.FastAccum)
		}
	}
	slow, fast := gemm(fp8), gemm(fp8Fast.name)
	if fast.Name() == slow.Name() {
		t.Errorf("fp8 and fp8 fast both named %q", slow.Name())
	}
	fast.FastAccum = false
	if fast != slow {
		t.Errorf("fp8 fast changes more than FastAccum: %+v, fp8 %+v", fast, slow)
	}
}

// TestRoundIn: each format's inputs are rounded for the reference as they
// are for upload.
func TestRoundIn(t *testing.T) {
	const x = float32(0.1)
	tests := []struct {
		f    format
		want float32
	}{
		{formats[0], x}, {formats[1], x}, {formats[2], round16(x)}, {formats[3], roundBF16(x)},
		{formats[4], round8(x)}, {fp16TN, round16(x)}, {fp8Fast, round8(x)},
	}
	for _, tt := range tests {
		if got := tt.f.roundIn(x); got != tt.want {
			t.Errorf("%s: roundIn(0.1) = %v, want %v", tt.f.name, got, tt.want)
		}
	}
}
