package main

import (
	"cmp"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cudarepl/lessons"
)

// completer completes what the REPL reads, for Tab: a command, then its
// arguments: lessons, steps, kernels, variants (names with spaces too:
// "run cuDNN S" completes to "run cuDNN SDPA"), flags and their values,
// and files.
type completer struct{ r *repl }

// partial is the word under the cursor, as far as it is typed.
type partial struct {
	before []string // the words before it, read as splitLine reads them
	word   string   // its text so far, quotes and escapes taken off
	quote  rune     // the quote it was opened with, if any
	rest   string   // the line after the command's name, as typed: run's variant
}

// Do returns the endings that complete the word before pos, and how many
// runes of it are typed (readline shows candidates from there).
func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	p := splitPartial(string(line[:pos]))
	if len(p.before) == 0 {
		var names []string
		for _, cmd := range commands {
			names = append(names, cmd.name)
		}
		return endings(names, p, true)
	}
	switch cmd := p.before[0]; cmd {
	case "help":
		if len(p.before) == 1 {
			var names []string
			for _, c := range commands {
				names = append(names, c.name)
			}
			return endings(names, p, true)
		}
	case "open":
		if len(p.before) == 1 {
			return endings(slugs(), p, true)
		}
	case "step":
		if len(p.before) == 1 {
			return endings(c.steps(), p, true)
		}
	case "show", "edit":
		switch {
		case len(p.before) == 1:
			return endings([]string{"kernel"}, p, true)
		case len(p.before) == 2 && p.before[1] == "kernel":
			return endings(c.kernelNames(), p, true)
		}
	case "run":
		// run reads the rest of the line as one name, spaces and all.
		rest := strings.TrimLeft(p.rest, " ")
		q := partial{word: rest}
		if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
			q.quote, q.word = rune(rest[0]), rest[1:]
		}
		return endingsAsTyped(c.variants(""), q)
	case "check":
		return c.flagged(p, checkFlags(&checkArgs{}), func(p partial) ([][]rune, int) {
			files, n := endingsOfFiles(p, ".cu", ".sched")
			more, _ := endings(slugs(), p, true)
			return append(files, more...), n
		})
	case "profile":
		return c.flagged(p, profileFlags(&profileArgs{}), func(p partial) ([][]rune, int) {
			return endings(c.variants(""), p, true)
		})
	case "fuse":
		if strings.HasPrefix(p.word, "-") {
			return endings([]string{"--n"}, p, true)
		}
	}
	return nil, 0
}

// flagged completes the arguments of a command that takes fs's flags: a
// flag's name after "-", a flag's value after the flag, else what
// positional completes.
func (c completer) flagged(p partial, fs *flag.FlagSet, positional func(partial) ([][]rune, int)) ([][]rune, int) {
	if prev := p.before[len(p.before)-1]; strings.HasPrefix(prev, "-") {
		name := strings.TrimLeft(prev, "-")
		if f := fs.Lookup(name); f != nil && !isBool(f) {
			switch name {
			case "kernel":
				return endingsOfFiles(p, ".cu", ".sched")
			case "json", "plots":
				return endingsOfFiles(p, ".json")
			case "variant", "like":
				return endings(c.variants(lessonIn(p.before)), p, true)
			case "sanitize":
				return endings([]string{"memcheck", "racecheck", "synccheck", "initcheck"}, p, true)
			}
			return nil, 0
		}
	}
	if strings.HasPrefix(p.word, "-") {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
		return endings(names, p, true)
	}
	return positional(p)
}

// lessonIn is the lesson a check line names, as in "check 14 --variant ":
// its first word that is neither a flag, a flag's value nor a file.
func lessonIn(words []string) string {
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "-"):
			if w != "--all" {
				i++ // its value
			}
		case strings.HasSuffix(w, ".cu"), strings.HasSuffix(w, ".sched"):
		default:
			return w
		}
	}
	return ""
}

// slugs is every lesson's name, in course order.
func slugs() []string {
	var out []string
	for _, l := range lessons.All() {
		out = append(out, l.Slug)
	}
	return out
}

// steps is the open lesson's step numbers.
func (c completer) steps() []string {
	var out []string
	if l := c.r.lesson; l != nil {
		for i := range l.Steps {
			out = append(out, strconv.Itoa(i+1))
		}
	}
	return out
}

// kernelNames is the open lesson's kernels, sorted.
func (c completer) kernelNames() []string {
	if c.r.lesson == nil {
		return nil
	}
	out := c.r.lesson.KernelNames()
	slices.Sort(out)
	return out
}

// variants is the variants of lesson name, or of the open lesson where
// name is "" or names none, sorted.
func (c completer) variants(name string) []string {
	l := c.r.lesson
	if name != "" {
		if found, err := lessons.Find(name); err == nil {
			l = found
		}
	}
	if l == nil {
		return nil
	}
	var out []string
	for _, im := range l.Variants() {
		out = append(out, im.Name)
	}
	slices.Sort(out)
	return out
}

// endings returns, for each of names that starts with the word typed, the
// rest of it, written so that splitLine reads the whole name back as one
// word: a space is escaped (or the quote the word opened is closed), and
// space ends a complete word.
func endings(names []string, p partial, space bool) ([][]rune, int) {
	var out [][]rune
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, p.word)
		if !ok {
			continue
		}
		switch {
		case p.quote != 0:
			rest += string(p.quote)
		case p.word == "" && strings.ContainsAny(n, " \"'\\"):
			rest = strconv.Quote(n) // nothing typed yet: the whole name, quoted
		default:
			rest = escape(rest)
		}
		if space {
			rest += " "
		}
		out = append(out, []rune(rest))
	}
	return out, len([]rune(p.word))
}

// endingsAsTyped is endings for a word that runs to the end of the line,
// such as run's variant, whose spaces need no escaping.
func endingsAsTyped(names []string, p partial) ([][]rune, int) {
	var out [][]rune
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, p.word); ok {
			if p.quote != 0 {
				rest += string(p.quote)
			}
			out = append(out, []rune(rest+" "))
		}
	}
	return out, len([]rune(p.word))
}

// escape puts a backslash before each character splitLine would otherwise
// read as the end of a word, or as a quote.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(" \t\"'\\", r) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// endingsOfFiles completes a path: folders (ending in /, no space after)
// and files that end in one of exts. A leading ~ stands for the home
// folder, as expandHome reads it.
func endingsOfFiles(p partial, exts ...string) ([][]rune, int) {
	dir, base := filepath.Split(p.word)
	entries, err := os.ReadDir(expandHome(cmp.Or(dir, ".")))
	if err != nil {
		return nil, 0
	}
	var dirs, files []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		switch {
		case e.IsDir():
			dirs = append(dirs, dir+name+"/")
		case slices.ContainsFunc(exts, func(x string) bool { return strings.HasSuffix(name, x) }):
			files = append(files, dir+name)
		}
	}
	out, n := endings(dirs, p, false)
	more, _ := endings(files, p, true)
	return append(out, more...), n
}

// splitPartial reads line, up to the cursor, as splitLine does, and keeps
// the word being typed apart.
func splitPartial(line string) partial {
	var p partial
	var cur strings.Builder
	inWord, escaped := false, false
	for i, c := range line {
		switch {
		case escaped:
			cur.WriteRune(c)
			escaped = false
		case c == '\\' && p.quote != '\'':
			escaped, inWord = true, true
		case p.quote != 0 && c == p.quote:
			p.quote = 0
		case p.quote != 0:
			cur.WriteRune(c)
		case c == '"' || c == '\'':
			p.quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				p.before = append(p.before, cur.String())
				if len(p.before) == 1 {
					p.rest = line[i:]
				}
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	p.word = cur.String()
	return p
}
