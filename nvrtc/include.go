package nvrtc

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"cudarepl/internal/dl"
)

// includeDirs finds the CUDA toolkit's headers (cuda_fp16.h, mma.h,
// cuda/pipeline…) for NVRTC, which searches no folder of its own: the
// first toolkit found of $CUDA_PATH, $CUDA_HOME, the one beside the NVRTC
// library in use, /usr/local/cuda-<NVRTC's version>, /usr/local/cuda and
// /usr/include, so that headers and compiler come from one toolkit. CUDA
// 13 keeps its C++ library (cuda/pipeline, nv/target) in include/cccl,
// which comes first where it exists. None found gives nil, and a source
// that includes a toolkit header fails to compile with a hint
// (CompileError.Hint).
var includeDirs = sync.OnceValue(func() []string {
	candidates := dl.ToolkitDirs("include")
	if lib := dl.LoadedLibrary("libnvrtc"); lib != "" {
		dir := filepath.Dir(lib)
		candidates = append(candidates, filepath.Join(dir, "..", "include"), filepath.Join(dir, "..", "..", "include"))
	}
	if v, err := Version(); err == nil {
		candidates = append(candidates, "/usr/local/cuda-"+v+"/include")
	}
	candidates = append(candidates, "/usr/local/cuda/include", "/usr/include")
	for _, d := range candidates {
		if _, err := os.Stat(filepath.Join(d, "cuda_fp16.h")); err != nil {
			continue
		}
		d = filepath.Clean(d)
		if cccl := filepath.Join(d, "cccl"); isDir(cccl) {
			return []string{cccl, d}
		}
		return []string{d}
	}
	return nil
})

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// IncludeDirs returns the folders NVRTC is given to find the CUDA
// toolkit's headers in; none where no toolkit's headers were found.
func IncludeDirs() []string { return includeDirs() }

// headerHint says how to get a header that NVRTC could not open.
func headerHint(header string) string {
	dirs := includeDirs()
	if len(dirs) == 0 {
		return header + " is a CUDA toolkit header, and no toolkit's headers were found here " +
			"(looked in $CUDA_PATH/include, beside libnvrtc, /usr/local/cuda/include and /usr/include); " +
			"install the CUDA toolkit, or set CUDA_PATH to where it is"
	}
	return header + " is in none of " + strings.Join(dirs, ", ") + "; is it a header of a newer toolkit, or of your own?"
}
