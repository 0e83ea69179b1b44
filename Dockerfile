# syntax=docker/dockerfile:1
# ralph-gate: a static Go binary on a distroless, non-root base. No HEALTHCHECK: probes live in
# Kubernetes (/healthz, /readyz). CI builds the binary with the same `go build` line
# (.ci/run, "build as the Dockerfile does").
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t ralph-gate .

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so source edits do not re-download them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download && go mod verify
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ralph-gate ./cmd/ralph-gate

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ralph-gate /ralph-gate
# nonroot is uid/gid 65532; the chart runs it with a read-only root filesystem and mounts
# /data (SQLite) and /tmp.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/ralph-gate"]
CMD ["serve", "--config", "/etc/ralph-gate/config.yml"]
