// Package testsupport holds what the test suites of several packages share:
// a buffer a process may write while the test reads it, a free loopback
// port, the control plane (kube-apiserver and etcd, the CRDs, the manager's
// identity, organizations) the envtest suites start, kubectl against it,
// the resource fixtures they create, and the benchmarks' call fixtures and
// latency measure. Only tests and test helper packages import it; a whole
// Switchboard process is started by its sub-package instance.
package testsupport
