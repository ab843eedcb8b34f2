// Package plots draws the course's figures with gonum.org/v1/plot and as
// Unicode charts for a terminal.
//
// A figure is described by a value (Lines, or Bars) built from measured
// results, so that the PNG, the SVG, the terminal chart and the tables all
// come from the same numbers. Every figure has a title that says what and
// where, axis labels with units, and a subtitle that says whether its data is
// live or replayed. Measured ceilings are drawn as dashed lines.
package plots
