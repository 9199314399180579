# Switchboard: the outbound voice-call operator.

IMG ?= switchboard:dev
# Tools are pinned and installed into bin/ (ignored by git).
LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
BENCHSTAT_VERSION ?= v0.0.0-20260908200009-22c9c6c9d4da
BENCHSTAT ?= $(LOCALBIN)/benchstat-$(BENCHSTAT_VERSION)
# versitygw: the real S3 server the recording tests run against.
VERSITYGW_VERSION ?= v1.8.0
VERSITYGW ?= $(LOCALBIN)/versitygw-$(VERSITYGW_VERSION)
KUSTOMIZE ?= kubectl kustomize
# Helm: the chart in config/helm/switchboard is linted and rendered by the tests.
HELM_VERSION ?= v3.22.0
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
# Test and run flags. TEST_FLAGS can add -run, -v, -count ...
TEST_FLAGS ?=
BENCH ?= CreateCall

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from the Go markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases
	@# The Helm chart renders the same generated files (one source each).
	cp config/crd/bases/*.yaml config/helm/switchboard/crds/
	cp config/rbac/role.yaml config/helm/switchboard/files/manager-role.yaml
	cp config/rbac/organization_role.yaml config/helm/switchboard/files/organization_role.yaml
	cp config/policy/call_source.yaml config/helm/switchboard/files/call_source.yaml
	cp config/prometheus/alerts.yaml config/helm/switchboard/files/alerts.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run

.PHONY: verify
verify: manifests generate ## Fail when generated files are stale.
	@if [ -n "$$(git status --porcelain -- api config)" ]; then \
		echo "Generated files are stale; run 'make manifests generate' and commit:"; \
		git status --porcelain -- api config; git diff -- api config | head -50; exit 1; fi

.PHONY: envtest
envtest: ## Build (once, cached) the kube-apiserver and etcd used by tests and make run.
	@hack/setup-envtest.sh >/dev/null

.PHONY: test-unit
test-unit: ## Run the tests that need no control plane and no tool outside Go (go test -short), in a minute or two.
	go test -short -timeout 5m $(TEST_FLAGS) ./...

TEST_ENV = KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)" SWITCHBOARD_VERSITYGW="$(abspath $(VERSITYGW))" SWITCHBOARD_HELM="$(abspath $(HELM))"
TEST_NEEDS = manifests generate vet hack/receivers/node/node_modules hack/sdk-compat/node_modules hack/openapi-lint/node_modules hack/retell-node-demo/node_modules $(VERSITYGW) $(HELM)

.PHONY: test
test: $(TEST_NEEDS) ## Run every test, envtest, S3 (versitygw) and the Helm chart included.
	$(TEST_ENV) go test -race -tags pocketsphinx -timeout 60m $(TEST_FLAGS) ./...

# Coverage is its own target: nothing reads the profile but a person, so
# the default run does not write it (with it, the cold CI run's packages
# took the same time; measured on 2026-11-28).
.PHONY: cover
cover: $(TEST_NEEDS) ## make test with a coverage profile of every package (cover.out; go tool cover -html=cover.out).
	$(TEST_ENV) go test -race -tags pocketsphinx -timeout 60m $(TEST_FLAGS) ./... -coverpkg=./... -coverprofile cover.out

.PHONY: screenshots
screenshots: ## Retake the README's dashboard pictures (internal/dashboard/testdata/*.png) with the dashboard's end-to-end tests.
	KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)" go test ./internal/dashboard/ -count 1 -args -update-screenshots

# The Node example receiver's dependencies, which its test runs against.
hack/receivers/node/node_modules: hack/receivers/node/package-lock.json
	npm ci --prefix hack/receivers/node

# The hosted service's Node SDK, pinned, which TestSDKCompatNode drives Switchboard with.
hack/sdk-compat/node_modules: hack/sdk-compat/package-lock.json
	npm ci --prefix hack/sdk-compat

hack/retell-node-demo/node_modules: hack/retell-node-demo/package-lock.json
	npm ci --prefix hack/retell-node-demo

# Redocly's OpenAPI linter, pinned, which TestOpenAPILint runs.
hack/openapi-lint/node_modules: hack/openapi-lint/package-lock.json
	npm ci --prefix hack/openapi-lint

BENCH_COUNT ?= 5

.PHONY: bench
bench: $(BENCHSTAT) ## Benchmark POST /v1/calls against raw Call creates (envtest); medians by benchstat.
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; rm -f bench.out; \
	for i in $$(seq $(BENCH_COUNT)); do \
		SWITCHBOARD_BENCH_API_FIRST=$$( [ $$((i % 2)) = 0 ] && echo 1 ) \
		go test ./internal/app/e2e/bench/ -run '^$$' -bench '$(BENCH)' -benchtime 3000x -count 1 | tee -a bench.out; \
	done
	$(BENCHSTAT) -col /path bench.out

WEBHOOK_BENCH_DELIVERIES ?= 1500

.PHONY: bench-webhooks
bench-webhooks: ## Benchmark webhook deliveries per second and event latency (envtest, local HTTPS receiver).
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	go test ./internal/app/e2e/bench/ -run '^$$' -bench 'WebhookDeliveries' -benchtime $(WEBHOOK_BENCH_DELIVERIES)x -count 1 -timeout 30m; \
	go test ./internal/app/e2e/bench/ -run '^$$' -bench 'WebhookLatency' -benchtime 1x -count 1 -timeout 30m

.PHONY: bench-fairness
bench-fairness: ## Benchmark one organization's event latency while another's 20 endpoints answer after 9.5 s (envtest).
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	go test ./internal/app/e2e/bench/ -run '^$$' -bench 'WebhookFairness' -benchtime 1x -count 1 -timeout 30m

SIP_BENCH_ATTEMPTS ?= 5000

.PHONY: bench-sip
bench-sip: ## Benchmark SIP call attempts per second and 200 concurrent recorded calls against sipp.
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'CallAttempts' -benchtime $(SIP_BENCH_ATTEMPTS)x -count 1 -timeout 30m
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'ConcurrentRecordedCalls' -benchtime 1x -count 1 -timeout 30m

.PHONY: bench-listen
bench-listen: ## Benchmark voice activity detection per frame, end of speech to the agent's reply on a call to baresip, and 50 concurrent listening calls to sipp.
	go test ./internal/telephony/media/ -run '^$$' -bench 'Segmenter' -count 1
	go test -tags pocketsphinx ./internal/telephony/sip/engine/ -run '^$$' -bench 'ReplyLatency' -benchtime 1x -count 1 -timeout 10m
	go test -tags pocketsphinx ./internal/telephony/sip/engine/ -run '^$$' -bench 'ConcurrentListeningCalls' -benchtime 1x -count 1 -timeout 10m

.PHONY: bench-conversation
bench-conversation: ## Benchmark a conversation's voice-to-voice latency and its parts on a real call to baresip, then 100 conversations at once against sipp (embedded recognizer, stand-in model).
	go test -tags pocketsphinx ./internal/telephony/sip/engine/ -run '^$$' -bench 'VoiceToVoice' -benchtime 1x -count 1 -timeout 10m
	go test -tags pocketsphinx ./internal/telephony/sip/engine/ -run '^$$' -bench 'ConcurrentConversations' -benchtime 1x -count 1 -timeout 30m

.PHONY: bench-voice
bench-voice: ## Benchmark a line's time from its text to its first audio frame (the embedded voice cold and cached, a streaming voice), and 200 concurrent calls speaking lines with variables through a voice server.
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'FirstAudio' -benchtime 60x -count 1
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'ConcurrentSpeakingCalls' -benchtime 1x -count 1 -timeout 30m

.PHONY: bench-transfer
bench-transfer: ## Benchmark the time from a transfer request to the callee hearing the person (REFER, bridge, warm) on loopback, then 50 concurrent bridged calls with both legs recorded (audio gaps, CPU).
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'Transfer(Refer|Bridge|Warm)' -benchtime 50x -count 1 -timeout 20m
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'ConcurrentBridges' -benchtime 1x -count 1 -timeout 20m

.PHONY: bench-secure
bench-secure: ## Benchmark CPU per call-second with SRTP against plain RTP on 100 concurrent recorded calls over TLS, and TLS call set-up p50/p95 with connection reuse.
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'SRTPCallSeconds' -benchtime 1x -count 1 -timeout 20m
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'TLSSetup' -benchtime 100x -count 1 -timeout 20m

.PHONY: bench-speech
bench-speech: ## Benchmark the recognizers over the held-out speech set: accuracy per category, WER, latency, CPU.
	go test -tags pocketsphinx ./internal/telephony/speech/ -run '^$$' -bench 'HeldOut' -benchtime 1x -count 1 -timeout 30m

.PHONY: bench-voices
bench-voices: ## Compare the candidate voices: the recognizer's WER on each over the telephone band and G.711, synthesis CPU.
	go test -tags pocketsphinx ./internal/telephony/speech/ -run '^$$' -bench 'Voices' -benchtime 1x -count 1 -timeout 30m

.PHONY: bench-stream
bench-stream: ## Benchmark the bot bridge: added latency both ways, 200 concurrent streamed calls against sipp and an echo bot.
	go test ./internal/telephony/stream/ -run '^$$' -bench 'AddedLatency' -benchtime 1x -count 1 -timeout 5m
	SWITCHBOARD_BENCH_STREAM_BOT=ahead go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'ConcurrentStreamedCalls' -benchtime 1x -count 1 -timeout 30m
	go test ./internal/telephony/sip/engine/ -run '^$$' -bench 'ConcurrentStreamedCalls' -benchtime 1x -count 1 -timeout 30m

WRITES_BENCH_CALLS ?= 300

.PHONY: bench-writes
bench-writes: ## Count the apiserver writes of an answered call with one webhook endpoint (from the apiserver's metrics).
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	go test ./internal/app/e2e/bench/ -run '^$$' -bench 'CallWrites' -benchtime $(WRITES_BENCH_CALLS)x -count 1 -timeout 30m -v | grep -v '^=== '

CEILING_BENCH_CALLS ?= 1500
CEILING_REPLICAS ?= 1

.PHONY: bench-ceiling
bench-ceiling: ## The per-call path against its ceiling: the apiserver's four writes per call alone, then Switchboard end to end, in one run; prints both and the ratio.
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	SWITCHBOARD_CEILING_REPLICAS=$(CEILING_REPLICAS) go test ./internal/app/e2e/bench/ -run '^$$' -bench 'Ceiling' -benchtime $(CEILING_BENCH_CALLS)x -count 1 -timeout 30m

ASSIGNMENT_BENCH_CALLS ?= 1000
ASSIGNMENT_RATE ?= 100

.PHONY: bench-assignment
bench-assignment: ## Assignment latency at 100 calls/s, calls applied with kubectl (the leader assigns them) and placed through the REST API: p50/p99 beside switchboard_call_assignment_seconds.
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	SWITCHBOARD_BENCH_RATE=$(ASSIGNMENT_RATE) go test ./internal/app/e2e/bench/ -run '^$$' -bench 'Assignment' -benchtime $(ASSIGNMENT_BENCH_CALLS)x -count 1 -timeout 10m

REPLICAS_BENCH_CALLS ?= 100

.PHONY: bench-replicas
bench-replicas: ## Concurrent recorded SIP calls to sipp over one, two and three replicas in one process: calls per replica, operator CPU per call-second, overhead per added replica.
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	SWITCHBOARD_REPLICAS_CALLS=$(REPLICAS_BENCH_CALLS) go test ./internal/app/e2e/bench/ -run '^$$' -bench 'Replicas' -benchtime 1x -count 1 -timeout 10m

SATURATION_GATE ?= 8

.PHONY: bench-saturation
bench-saturation: ## POST /v1/calls under a burst from 32, then 64, clients for 10 s: p50/p99, the share answered 503 by the placement gate (SATURATION_GATE=-1: without it).
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	SWITCHBOARD_SATURATION_GATE=$(SATURATION_GATE) go test ./internal/app/e2e/bench/ -run '^$$' -bench 'Saturation' -benchtime 1x -count 1 -timeout 30m

PACED_GATE ?= 8

.PHONY: bench-paced
bench-paced: ## POST /v1/calls at half the ceiling measured in the same run (the apiserver's four writes per call alone), for 10 s: p50/p90/p99 (PACED_GATE=-1: without the gate).
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	SWITCHBOARD_PACED_GATE=$(PACED_GATE) go test ./internal/app/e2e/bench/ -run '^$$' -bench 'Paced' -benchtime 1x -count 1 -timeout 30m

SOAK_DURATION ?= 30m
SOAK_RATE ?= 50
SOAK_RETENTION ?= 5m

.PHONY: bench-soak
bench-soak: ## Soak: calls at a steady rate for a long time with a short retention; prints cluster size and memory every minute.
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	SWITCHBOARD_SOAK_DURATION=$(SOAK_DURATION) SWITCHBOARD_SOAK_RATE=$(SOAK_RATE) SWITCHBOARD_SOAK_RETENTION=$(SOAK_RETENTION) \
	go test ./internal/app/e2e/bench/ -run '^$$' -bench 'Soak' -benchtime 1x -count 1 -timeout 3h -v | grep -v '^=== '

HISTORY_BENCH_CALLS ?= 1000000

.PHONY: bench-history
bench-history: ## Benchmark list and get latency over a million stored calls, on SQLite and PostgreSQL.
	SWITCHBOARD_HISTORY_BENCH_CALLS=$(HISTORY_BENCH_CALLS) go test ./internal/history/ -run '^$$' -bench 'Store' -benchtime 2000x -count 1 -timeout 60m

CAMPAIGN_PACING ?= 10m

.PHONY: bench-campaigns
bench-campaigns: ## Campaigns: a 100,000-contact CSV upload and its first dial, the contact store over a million contacts (SQLite and PostgreSQL), pacing accuracy.
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; \
	go test ./internal/app/e2e/bench/ -run '^$$' -bench 'CampaignStart|CampaignUploadMemory' -benchtime 3x -count 1 -v | grep -v '^=== ' && \
	go test ./internal/history/ -run '^$$' -bench 'Contacts' -benchtime 500x -count 1 -timeout 60m -v | grep -v '^=== ' && \
	SWITCHBOARD_PACING_BENCH=$(CAMPAIGN_PACING) go test ./internal/campaigns/ -run '^$$' -bench 'Pacing|Prepare' -benchtime 1x -count 1 -timeout 30m

DASHBOARD_BENCH_CALLS ?= 1000000

.PHONY: bench-dashboard
bench-dashboard: ## Benchmark the dashboard's calls page and call page over a million stored calls (envtest, SQLite).
	SWITCHBOARD_DASHBOARD_BENCH_CALLS=$(DASHBOARD_BENCH_CALLS) go test ./internal/dashboard/ -run '^$$' -bench 'Pages' -benchtime 500x -count 1 -timeout 60m

READS_BENCH_CALLS ?= 1000000

.PHONY: bench-reads
bench-reads: ## Peak heap and RSS under one key's 64 parallel maximal lists and 8 overviews, over 300 calls of 60 KB and a million stored calls (envtest, SQLite).
	@export KUBEBUILDER_ASSETS="$$(hack/setup-envtest.sh)"; 	SWITCHBOARD_READS_BENCH_CALLS=$(READS_BENCH_CALLS) go test ./internal/dashboard/ -run '^$$' -bench 'ReadMemory' -benchtime 3x -count 1 -timeout 90m

##@ Build

.PHONY: build
build: manifests generate ## Build the manager binary into bin/.
	CGO_ENABLED=0 go build -trimpath -o $(LOCALBIN)/switchboard ./cmd/switchboard

# ARGS passes flags to the binary: make run ARGS="--call-retention=30s".
ARGS ?=

# The binary is built, then exec'd rather than started by `go run`: go run
# exits 1 when it is interrupted itself, so Ctrl-C would end with
# "make: *** [run] Error 1" even after a clean shutdown. Exec'd, the
# binary's own exit status (0 after Ctrl-C or SIGTERM) is the recipe's.
# make run builds the embedded speech recognizer in when libpocketsphinx is
# installed (pkg-config finds it), so local SIP agents hear speech as in a
# deployment; without it their gathers take keys only, and the log says why.
RUN_TAGS := dev$(shell pkg-config --exists pocketsphinx 2>/dev/null && echo ,pocketsphinx)

.PHONY: run
run: manifests generate ## Start a complete local instance (control plane, operator, REST API, demo data; state kept in .dev/).
	go build -tags $(RUN_TAGS) -o $(LOCALBIN)/switchboard-dev ./cmd/switchboard
	SWITCHBOARD_ASSETS="$$(hack/setup-envtest.sh)" exec $(LOCALBIN)/switchboard-dev --dev $(ARGS)

.PHONY: docker-build
docker-build: ## Build the container image.
	docker build -t $(IMG) .

# The installer names the image the cluster pulls, so it has no default:
# switchboard:dev exists on no registry.
.PHONY: build-installer
build-installer: require-img manifests generate ## Write dist/install.yaml for IMG: CRDs and the manager, one file.
	mkdir -p dist
	$(KUSTOMIZE) config/default | sed 's|image: controller:latest|image: $(IMG)|' > dist/install.yaml

.PHONY: require-img
require-img:
	@if [ "$(origin IMG)" = file ] || [ -z "$(IMG)" ]; then \
		echo "IMG is not set: name the image the installer deploys, for example" >&2; \
		echo "  make build-installer IMG=registry.example.com/switchboard:v0.1.0" >&2; exit 1; fi

##@ Deployment

.PHONY: install
install: manifests ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: manifests ## Remove the CRDs (and every Switchboard resource) from the cluster.
	$(KUSTOMIZE) config/crd | kubectl delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests ## Deploy the operator to the cluster of the current kubeconfig.
	$(KUSTOMIZE) config/default | sed 's|image: controller:latest|image: $(IMG)|' | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove the operator from the cluster.
	$(KUSTOMIZE) config/default | kubectl delete --ignore-not-found -f -

##@ Tools

.PHONY: tools
tools: $(CONTROLLER_GEN) $(GOLANGCI_LINT) $(HELM) $(VERSITYGW) ## Build the pinned Go tools (into bin/) that verify, lint and test use.

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(BENCHSTAT):
	GOBIN=$(LOCALBIN) go install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)
	mv $(LOCALBIN)/benchstat $@

$(GOLANGCI_LINT):
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@

# Helm builds in about a minute, once.
$(HELM):
	GOBIN=$(LOCALBIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/helm $@

# versitygw builds in about 2 minutes, once.
$(VERSITYGW):
	GOBIN=$(LOCALBIN) go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	mv $(LOCALBIN)/versitygw $@
