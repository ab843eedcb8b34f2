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

## cross: the client for every system it runs on, with CGO_ENABLED=0, into
## build/cudarepl-<os>-<arch> (.exe for Windows); scripts/ci/cross.sh also vets each
CROSS_TARGETS ?= linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64
.PHONY: cross
cross:
	@set -e; for t in $(CROSS_TARGETS); do \
	  os=$${t%/*}; arch=$${t#*/}; out=build/cudarepl-$$os-$$arch; [ "$$os" != windows ] || out=$$out.exe; \
	  echo "GOOS=$$os GOARCH=$$arch $(GO) build -o $$out ./cmd/cudarepl"; \
	  GOOS=$$os GOARCH=$$arch $(GO) build -o $$out ./cmd/cudarepl; \
	done

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
	$(GO) test -c -tags gpu -ldflags="$(GPU_LDFLAGS)" -o build/nccl.test ./nccl

## gpu-test: build and run the GPU tests; without a GPU they skip and say why
gpu-test: gpu-build
	./build/gpu.test -test.v -test.count=1
	cd lessons/all && ../../build/lessons.test -test.v -test.count=1
	cd notebook && ../build/notebook.test -test.v -test.count=1
	./build/cudnnx.test -test.v -test.count=1
	./build/blas.test -test.v -test.count=1
	./build/nccl.test -test.v -test.count=1

## notebooks: regenerate notebooks/ from lessons/ (a test fails when they are stale)
notebooks:
	$(GO) run ./cmd/cudarepl notebooks

## notebook: install the GoNB Jupyter kernel (GoNB and goimports, versions pinned in go.mod)
## into Jupyter, with goimports' folder on the kernel's PATH; Jupyter itself first (README, Notebooks)
notebook:
	@command -v jupyter >/dev/null 2>&1 || { \
	  echo "make notebook: Jupyter is not installed. On Debian: sudo apt-get install jupyter-notebook jupyter-nbconvert jupyter-client"; exit 1; }
	@jupyter nbconvert --version >/dev/null 2>&1 || { \
	  echo "make notebook: jupyter nbconvert is missing (the notebooks' tests run it). On Debian: sudo apt-get install jupyter-nbconvert"; exit 1; }
	$(GO) install github.com/janpfeifer/gonb golang.org/x/tools/cmd/goimports
	@set -e; \
	gobin="$$($(GO) env GOBIN)"; [ -n "$$gobin" ] || gobin="$$($(GO) env GOPATH | cut -d: -f1)/bin"; \
	data="$$(jupyter --data-dir)"; spec="$$data/kernels/gonb/kernel.json"; \
	log="$$(mktemp)"; \
	if ! JUPYTER_DATA_DIR="$$data" PATH="$$gobin:$$PATH" "$$gobin/gonb" --install --force_deps >"$$log" 2>&1; then \
	  cat "$$log"; rm -f "$$log"; echo "make notebook: gonb --install failed (its log is above)"; exit 1; fi; \
	rm -f "$$log"; \
	client="$$(jupyter --version 2>/dev/null | sed -n 's/^jupyter_client *: *\([0-9]*\).*/\1/p')"; \
	if [ "$${client:-0}" -ge 7 ]; then path="$$gobin:\$${PATH}"; else path="$$gobin:$$PATH"; fi; \
	sed -i "s|\"env\":{}|\"env\":{\"PATH\":\"$$path\"}|" "$$spec"; \
	grep -q "\"PATH\":\"$$gobin:" "$$spec" || { echo "make notebook: could not put $$gobin on the kernel's PATH in $$spec: put it on yours"; exit 1; }; \
	echo; \
	echo "GoNB is installed as the Jupyter kernel \"Go (gonb)\" ($$spec),"; \
	echo "and finds goimports in $$gobin, on or off your PATH."; \
	command -v gopls >/dev/null 2>&1 || [ -x "$$gobin/gopls" ] || \
	  echo "gopls is not installed: the notebooks run without it; 'go install golang.org/x/tools/gopls@latest' adds completion in Jupyter."; \
	echo "Open the lessons:  jupyter notebook notebooks/   (or: jupyter lab notebooks/, where JupyterLab is installed)"; \
	echo "Run the first cell of a notebook, then the others in order."

## classroom: as root on a GPU server, a class of LEARNERS (30) behind JupyterHub, each with their
## own account, GoNB kernel, workspace and worker, a device-memory budget (MEM_LIMIT, e.g. 4GiB;
## the GPU shared out when unset) and GPUS (e.g. 0,1) shared out in turn; more options in
## CLASSROOM_ARGS (scripts/classroom/setup.sh --help). docs/classroom.md says what it does.
LEARNERS ?= 30
.PHONY: classroom
classroom:
	GO="$$(command -v $(GO) || true)" scripts/classroom/setup.sh --learners $(LEARNERS) \
	  $(if $(MEM_LIMIT),--mem-limit $(MEM_LIMIT)) $(if $(GPUS),--gpus $(GPUS)) $(CLASSROOM_ARGS)

## lint: gofmt and go vet, GPU tests included
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags gpu ./...

clean:
	rm -rf build
