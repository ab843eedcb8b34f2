// Package layers holds, as a test, the rule of cudarepl's package graph:
// every package stands on a floor, and imports packages of lower floors
// only (docs/architecture.md draws the floors). It has no code of its own.
package layers
