// Package testsupport holds what the test suites of several packages share:
// a buffer a process may write while the test reads it, a free loopback
// port, and the control plane (kube-apiserver and etcd, the CRDs, the
// manager's identity and organizations) the envtest suites start.
// Only tests and test helper packages import it.
package testsupport
