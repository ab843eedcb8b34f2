// Package plots draws the course's figures with gonum.org/v1/plot and as
// Unicode charts for a terminal.
//
// A figure is described by a value (Lines, Bars or a Timeline) built from
// measured results, so that the PNG, the SVG, the terminal chart and the
// tables all come from the same numbers. Every figure has a title that says
// what and where, axis labels with units, and a subtitle that says whether
// its data is live or replayed.
//
// Axes end near the data: the legend is drawn below the plot, not in room
// made for it above the data, and a y axis turns logarithmic where the
// values span more than 100× or a ceiling stands far above them. A
// measured baseline is a dashed red line, a limit (the GPU's peak, its
// memory) a dotted black one, in the figures and in the terminal (╌ and ┈).
// A size that did not fit in memory is marked so that it cannot be read as
// a value: across the figure where nothing was measured, at what it would
// need in a memory figure.
//
// A series given a Style is drawn in that colour and marker wherever it
// appears, so that a lesson can keep one look per series over its figures;
// the terminal draws the same marker shapes.
//
// Interactive figures (Plotly or ECharts in a notebook) are left out on
// purpose: they need a module or a script from the network that no other
// part of the course does, and every figure already comes with the table
// of its values.
package plots
