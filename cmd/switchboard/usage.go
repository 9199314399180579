package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagGroups order --help by concern. A name ending in "-" takes every flag
// it begins; the first group that takes a flag shows it.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Local development (make run)", []string{"dev", "dev-dir"}},
	{"REST API and dashboard", []string{"api-addr", "public-url", "api-request-timeout", "max-placements-in-flight", "default-region", "auth-failure-", "trusted-proxies",
		"max-concurrent-reads-per-organization", "list-page-max-bytes"}},
	{"Calls and carriers", []string{"max-concurrent-calls", "max-active-calls-per-replica", "worker-", "drain-timeout", "call-", "simulated-carrier", "sim-", "sip", "sip-", "rtp-ports", "flite", "tts-timeout", "speech-", "stream-", "allow-private-model-hosts"}},
	{"Recordings", []string{"recording-", "s3-"}},
	{"History store", []string{"history-dsn"}},
	{"Webhook events", []string{"webhook-", "max-concurrent-deliveries", "max-concurrent-deliveries-"}},
	{"Limits per organization (namespace annotations change them)", []string{"quota-"}},
	{"Cluster, leader election, metrics and probes", []string{"kubeconfig", "kube-api-", "leader-", "metrics-", "health-probe-"}},
	{"Logging (JSON at info level; console at debug with --dev)", []string{"zap-"}},
}

// groupOf is the title of the group that shows name, "" for none.
func groupOf(name string) string {
	for _, g := range flagGroups {
		for _, n := range g.names {
			if n == name || strings.HasSuffix(n, "-") && strings.HasPrefix(name, n) {
				return g.title
			}
		}
	}
	return ""
}

// printUsage writes --help: the flags of fs by group, each as the flag
// package writes them.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	_, _ = fmt.Fprintf(w, "Usage: switchboard [flags]\n\nThe Switchboard operator: REST API, dashboard, reconcilers and call engine.\n")
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byGroup[groupOf(f.Name)] = append(byGroup[groupOf(f.Name)], f) })
	titles := []string{}
	for _, g := range flagGroups {
		titles = append(titles, g.title)
	}
	for _, title := range append(titles, "") {
		if len(byGroup[title]) == 0 {
			continue
		}
		_, _ = fmt.Fprintf(w, "\n%s:\n", cmp.Or(title, "Other"))
		for _, f := range byGroup[title] {
			printFlag(w, f)
		}
	}
}

// printFlag writes one flag as flag.PrintDefaults does.
func printFlag(w io.Writer, f *flag.Flag) {
	kind, usage := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if kind != "" {
		line += " " + kind
	}
	if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
		usage += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	_, _ = fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
}
