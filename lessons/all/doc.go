//go:generate go run generate.go

package all
