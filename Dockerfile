# Build a static manager binary, then ship it on Debian slim with flite (the
# text-to-speech engine that speaks agents' scripts), non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY cmd/ cmd/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/switchboard ./cmd/switchboard

FROM debian:12-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends flite \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/switchboard /switchboard
USER 65532:65532
# 8080 REST API, 8081 probes; SIP and RTP use ephemeral UDP/TCP ports.
EXPOSE 8080 8081
ENTRYPOINT ["/switchboard"]
