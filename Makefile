# cudarepl builds with CGO_ENABLED=0: CUDA is loaded at run time, never linked.
GO ?= go
export CGO_ENABLED = 0

.PHONY: all build run test gpu-build gpu-test lint clean notebook notebooks

all: build

## build: the cudarepl binary, into build/
build:
	$(GO) build -o build/cudarepl ./cmd/cudarepl

## run: build and start cudarepl (pass arguments with ARGS="device")
run: build
	./build/cudarepl $(ARGS)

## test: every test that needs no GPU (what CI runs); the notebooks run when GoNB is installed.
## What needs NVRTC, Jupyter or a GPU and is missing is skipped, and listed at the end with why.
test:
	$(GO) test -count=1 -timeout 30m -json ./... | $(GO) run ./scripts/testsum

## gpu-build: the GPU test binaries, into build/, to carry to a GPU machine
## (without symbol tables, so that all of them fit in one carry)
GPU_LDFLAGS ?= -s -w
gpu-build: build
	$(GO) test -c -tags gpu -ldflags="$(GPU_LDFLAGS)" -o build/gpu.test ./gpu
	$(GO) test -c -tags gpu -ldflags="$(GPU_LDFLAGS)" -o build/lessons.test ./lessons/all
	$(GO) test -c -tags gpu -ldflags="$(GPU_LDFLAGS)" -o build/notebook.test ./notebook
	$(GO) test -c -tags gpu -ldflags="$(GPU_LDFLAGS)" -o build/cudnnx.test ./cudnnx
	$(GO) test -c -tags gpu -ldflags="$(GPU_LDFLAGS)" -o build/blas.test ./blas

## gpu-test: build and run the GPU tests; without a GPU they skip and say why
gpu-test: gpu-build
	./build/gpu.test -test.v -test.count=1
	cd lessons/all && ../../build/lessons.test -test.v -test.count=1
	cd notebook && ../build/notebook.test -test.v -test.count=1
	./build/cudnnx.test -test.v -test.count=1
	./build/blas.test -test.v -test.count=1

## notebooks: regenerate notebooks/ from lessons/ (a test fails when they are stale)
notebooks:
	$(GO) run ./cmd/cudarepl notebooks

## notebook: install the GoNB Jupyter kernel (GoNB and goimports, versions pinned in go.mod)
notebook:
	$(GO) install github.com/janpfeifer/gonb golang.org/x/tools/cmd/goimports
	"$$($(GO) env GOPATH)/bin/gonb" --install --force_deps
	@echo
	@echo "GoNB is installed as the Jupyter kernel \"Go (gonb)\"."
	@echo "1. Put $$($(GO) env GOPATH)/bin on your PATH (GoNB runs goimports from there)."
	@echo "2. Open the lessons:  jupyter lab notebooks/   (or: jupyter notebook notebooks/)"
	@echo "3. Run the first cell of a notebook, then the others in order."

## lint: gofmt and go vet, GPU tests included
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags gpu ./...

clean:
	rm -rf build
