// One "go generate ./..." from the repository's root refreshes everything
// made from the lessons, in order: the registry (all.go), the notebooks,
// and the golden files of the REPL transcript, the tables and the figures.
//
//go:generate go run generate.go
//go:generate go run ../../cmd/cudarepl notebooks --dir ../../notebooks
//go:generate go test ../../cmd/cudarepl ../../lessons ../../plots -run Golden -update

package all
