package all

// The test binary is its own GPU worker, as cudarepl is.
import _ "cudarepl/worker"
