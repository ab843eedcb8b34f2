// Package inline shows figures where the program runs: inline in a GoNB
// notebook cell (as SVG), or as a Unicode chart on a terminal.
package inline

import (
	"fmt"
	"io"

	"github.com/janpfeifer/gonb/gonbui"

	"cudarepl/plots"
)

// InNotebook reports whether the program runs in a GoNB notebook cell.
func InNotebook() bool { return gonbui.IsNotebook }

// Show displays f in the notebook cell, or writes it to w as a terminal
// chart 80 columns wide when not in a notebook.
func Show(w io.Writer, f plots.Figure) error {
	if !gonbui.IsNotebook {
		return plots.Terminal(w, f, 80)
	}
	svg, err := plots.Encode(f, "svg")
	if err != nil {
		return err
	}
	gonbui.DisplaySVG(string(svg))
	gonbui.Sync() // the figure reaches the cell even if the program exits next
	return nil
}

// HTML displays an HTML fragment, such as a results table, in the notebook
// cell; outside a notebook it writes text to w instead.
func HTML(w io.Writer, html, text string) {
	if gonbui.IsNotebook {
		gonbui.DisplayHTML(html)
		gonbui.Sync()
		return
	}
	fmt.Fprint(w, text)
}
