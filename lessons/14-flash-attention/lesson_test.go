package flashattention

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"cudarepl/kernels"
	"cudarepl/lessons"
	"cudarepl/lessons/lessontest"
	"cudarepl/plots"
)

func TestLesson(t *testing.T) { lessontest.Run(t) }

// tileArgs reads the template arguments a kernel of flash_v2_tile's family
// hands its work to it with: D, MT, LDSM, ASYNC, ONES.
var tileArgs = regexp.MustCompile(`flash_v2_tile<(\d+), (\d+), (true|false), (true|false), (true|false)>\(`)

// TestStepsChangeOneThing: from flash_v2a_mma to flash_v2 each kernel
// switches on exactly one thing of flash_v2_tile that the one before it
// had off, and each is launched with the tiles of queries and the stages
// of K and V that its switches give it.
func TestStepsChangeOneThing(t *testing.T) {
	src, err := kernels.Source(kernelFile)
	if err != nil {
		t.Fatal(err)
	}
	var prev []string
	for _, name := range append(slices.Clone(v2Steps), "flash_v2") {
		fn, err := kernels.Function(src, name)
		if err != nil {
			t.Fatal(err)
		}
		m := tileArgs.FindStringSubmatch(fn)
		if m == nil {
			t.Fatalf("%s does not hand its work to flash_v2_tile:\n%s", name, fn)
		}
		args := m[1:]
		if args[0] != "64" {
			t.Errorf("%s: D = %s, want 64", name, args[0])
		}
		if prev != nil {
			var changed []int
			for i := range args {
				if args[i] != prev[i] {
					changed = append(changed, i)
				}
			}
			if len(changed) != 1 {
				t.Errorf("%s changes %v of flash_v2_tile<%s> into <%s>, want one thing", name, changed, strings.Join(prev, ", "), strings.Join(args, ", "))
			}
		}
		prev = args
		tiles, _ := strconv.Atoi(args[1])
		stages := 1
		if args[3] == "true" {
			stages = 2
		}
		if got := v2Shapes[name]; got.tiles != tiles || got.stages != stages {
			t.Errorf("%s is launched with %d tiles a warp and %d stages; its kernel has %d and %d", name, got.tiles, got.stages, tiles, stages)
		}
	}
}

// TestImplsSayWhatTheyChange: every version, the steps between v1 and v2
// and v1 made causal included, has a summary from its kernel's comment,
// and the sweeps over S time only the versions they recorded.
func TestImplsSayWhatTheyChange(t *testing.T) {
	p := problem()
	var names []string
	for _, im := range p.Impls {
		names = append(names, im.Name)
		if im.Summary == "" {
			t.Errorf("%s has no summary", im.Name)
		}
	}
	want := slices.Concat([]string{"flash_v1", "flash_v1_causal"}, v2Steps, []string{"flash_v2", "flash_v3", cudnnName, chainName})
	if !slices.Equal(names, want) {
		t.Errorf("impls = %q, want %q", names, want)
	}
	for _, n := range compared {
		if !slices.Contains(names, n) {
			t.Errorf("the sweeps compare %s, which is no impl", n)
		}
	}
}

// TestOneLookPerSeries: a series has one colour and one marker in every
// figure of the lesson, no two series of a figure share either, and the
// chain of lesson 13 and cuDNN are drawn as baselines beside the kernels.
func TestOneLookPerSeries(t *testing.T) {
	l, err := lessons.Find("flash-attention")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := lessontest.ReplayEnv(t, &out)
	var figs []plots.Lines
	env.ShowFigure = func(f plots.Figure) error {
		if lines, ok := f.(plots.Lines); ok {
			figs = append(figs, lines)
		}
		return nil
	}
	for i, s := range l.Steps {
		if slices.Contains([]string{"Against cuDNN", "Head dimension 128", "Causal"}, s.Title) {
			if err := l.RunStep(env, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(figs) != 4 {
		t.Fatalf("%d figures of lines, want 4 (against cuDNN, its memory, d = 128, causal)", len(figs))
	}
	looks := map[string]plots.Style{}
	for _, f := range figs {
		colours, markers := map[int]string{}, map[int]string{}
		for _, se := range f.Series {
			if se.Style == nil {
				t.Fatalf("%s: %s has no style of the lesson's", f.Title, se.Name)
			}
			st := *se.Style
			if prev, ok := looks[se.Name]; ok && prev != st {
				t.Errorf("%s: %s is drawn %+v, elsewhere %+v", f.Title, se.Name, st, prev)
			}
			looks[se.Name] = st
			if other, dup := colours[st.Colour]; dup {
				t.Errorf("%s: %s has %s's colour", f.Title, se.Name, other)
			}
			if other, dup := markers[st.Marker]; dup {
				t.Errorf("%s: %s has %s's marker", f.Title, se.Name, other)
			}
			colours[st.Colour], markers[st.Marker] = se.Name, se.Name
			if want := se.Name == cudnnName || se.Name == chainName; se.Baseline != want {
				t.Errorf("%s: %s drawn as a baseline %v, want %v", f.Title, se.Name, se.Baseline, want)
			}
		}
	}
}
