# Build the manager binary with the embedded speech recognizer (PocketSphinx
# through cgo), then ship it on Debian slim with flite (the text-to-speech
# engine that speaks agents' scripts) and PocketSphinx's library and US
# English model (the recognizer that hears callees), non-root. Both stages
# are Debian 12, so the binary links against the libraries it runs with.
FROM golang:1.26-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpocketsphinx-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY cmd/ cmd/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=1 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -tags pocketsphinx -ldflags="-s -w" -o /out/switchboard ./cmd/switchboard

FROM debian:12-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends flite \
    libpocketsphinx3 pocketsphinx-en-us \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/switchboard /switchboard
USER 65532:65532
# 8080 REST API, 8081 probes; SIP and RTP use ephemeral UDP/TCP ports.
EXPOSE 8080 8081
ENTRYPOINT ["/switchboard"]
