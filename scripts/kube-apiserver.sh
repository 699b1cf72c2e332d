#!/usr/bin/env bash
# Build (once) and locate the kube-apiserver the Kubernetes-backend tests run on loopback.
#
#   scripts/kube-apiserver.sh build          # install toolchain + etcd with apt, build v1.20.2, cache it
#   scripts/kube-apiserver.sh path           # print the cached binary's path (exit 1 if not built)
#   scripts/kube-apiserver.sh build kubectl  # the same for kubectl v1.20.2 (for a machine without kubectl)
#   scripts/kube-apiserver.sh path kubectl
#   scripts/kube-apiserver.sh build kube-scheduler  # kube-scheduler v1.20.2, for `bench --backend kubernetes --compare`
#   scripts/kube-apiserver.sh path kube-scheduler
#
# Everything comes from the Debian archive apt already uses (see /work/shared/kube-apiserver.md):
# bookworm's `kubernetes` source package is the last one that still ships upstream's vendor/ tree.
# The binary is cached outside the repository and never committed; re-running `build` is a no-op.
set -euo pipefail

KUBE_VERSION=v1.20.2
# The Debian source package's upstream tarball (the "+really" version is Debian's, the tree is v1.20.2).
ORIG_TARBALL=kubernetes_1.20.5+really1.20.2.orig.tar.gz
# Upstream's commit for the v1.20.2 tag, stamped into the binary like hack/lib/version.sh does.
KUBE_GIT_COMMIT=faecb196815e248d3ecfb03c680a4507229c2a56

CACHE_DIR=${SCHEDBOARD_KUBE_CACHE:-/var/cache/schedboard}
# Which command of the tree: kube-apiserver (default), kubectl or kube-scheduler.
COMMAND=${2:-kube-apiserver}
case "$COMMAND" in
    kube-apiserver|kubectl|kube-scheduler) ;;
    *) echo "unknown command $COMMAND: kube-apiserver, kubectl or kube-scheduler" >&2; exit 2 ;;
esac
BINARY="$CACHE_DIR/$COMMAND-$KUBE_VERSION"
GO_ROOT=/usr/lib/go-1.19
APT_SOURCES=/etc/apt/sources.list.d/debian.sources
SRC_ENTRY=/etc/apt/sources.list.d/schedboard-kube-src.sources

log() { printf '[kube-apiserver.sh] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

binary_works() {
    if [ "$COMMAND" = kubectl ]; then
        [ -x "$BINARY" ] && "$BINARY" version --client >/dev/null 2>&1
    else
        [ -x "$BINARY" ] && "$BINARY" --version >/dev/null 2>&1
    fi
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_toolchain() {
    log "apt-get update; installing golang-1.19-go and etcd-server"
    as_root apt-get update -qq >&2
    # A kubectl installed from elsewhere can collide with a file of a dependency; dpkg then leaves
    # packages unconfigured. Finish their configuration and try once more (never install
    # Debian's kubernetes-client).
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            golang-1.19-go etcd-server >&2; then
        log "apt-get install failed; running dpkg --configure -a and retrying"
        as_root dpkg --configure -a >&2 || true
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            golang-1.19-go etcd-server >&2
    fi
    [ -x "$GO_ROOT/bin/go" ] || die "$GO_ROOT/bin/go missing after install"
    command -v etcd >/dev/null || die "etcd missing after install"
}

# The main Debian archive's URI exactly as apt already has it configured (first deb stanza that
# carries the plain `bookworm` suite), so the script names no host of its own.
debian_main_uri() {
    [ -r "$APT_SOURCES" ] || die "$APT_SOURCES not found: cannot tell which Debian archive apt uses"
    awk '
        /^[[:space:]]*$/ { if (uri != "" && suite) { print uri; exit } uri = ""; suite = 0; next }
        /^URIs:/ { uri = $2 }
        /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
        END { if (uri != "" && suite) print uri }
    ' "$APT_SOURCES" | head -n1
}

remove_src_entry() {
    if [ -e "$SRC_ENTRY" ]; then
        log "removing temporary deb-src entry and refreshing apt lists"
        as_root rm -f "$SRC_ENTRY"
        as_root apt-get update -qq >&2 || log "warning: apt-get update after removing $SRC_ENTRY failed"
    fi
}

fetch_source() {  # $1: directory to download into
    local dest=$1 uri
    if [ -f "$dest/$ORIG_TARBALL" ]; then
        log "source tarball already downloaded"
        return
    fi
    uri=$(debian_main_uri)
    [ -n "$uri" ] || die "no URIs line for suite bookworm in $APT_SOURCES"
    log "temporary deb-src entry for $uri bookworm main"
    trap remove_src_entry EXIT
    trap 'exit 130' INT  # so that the EXIT trap also runs on Ctrl-C and kill
    trap 'exit 143' TERM
    as_root tee "$SRC_ENTRY" >/dev/null <<EOF
Types: deb-src
URIs: $uri
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    as_root apt-get update -qq >&2
    (cd "$dest" && apt-get source --download-only kubernetes >&2)
    remove_src_entry
    trap - EXIT INT TERM
    [ -f "$dest/$ORIG_TARBALL" ] || die "apt-get source did not produce $ORIG_TARBALL (got: $(ls "$dest"))"
}

build() {
    if binary_works; then
        log "cached: $BINARY"
        echo "$BINARY"
        return
    fi
    # One build at a time in the shared work directory (two sessions building two commands would
    # unpack and remove the same tree under each other); the second waits, then finds its binary or builds.
    mkdir -p "$CACHE_DIR"
    exec 9>"$CACHE_DIR/build.lock"
    flock 9
    if binary_works; then
        log "cached: $BINARY"
        echo "$BINARY"
        return
    fi
    install_toolchain

    local work="$CACHE_DIR/build"
    mkdir -p "$work"
    fetch_source "$work"

    local tree="$work/kubernetes-$KUBE_VERSION"
    if [ ! -f "$tree/cmd/kube-apiserver/apiserver.go" ]; then
        log "unpacking $ORIG_TARBALL"
        rm -rf "$tree" "$work/unpack"
        mkdir -p "$work/unpack"
        tar -xzf "$work/$ORIG_TARBALL" -C "$work/unpack"
        # The tarball has one top-level directory; its name is not part of the contract.
        local top
        top=$(find "$work/unpack" -mindepth 1 -maxdepth 1 -type d | head -n1)
        [ -f "$top/cmd/kube-apiserver/apiserver.go" ] || die "unexpected tarball layout under $top"
        mv "$top" "$tree"
        rm -rf "$work/unpack"
    fi

    # GOPATH mode: module mode fails on this tree, and vendor/ resolves as k8s.io/kubernetes/vendor/...
    export GOPATH="$work/gopath"
    export GOCACHE="$work/gocache"
    export PATH="$GO_ROOT/bin:$PATH"
    export GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0
    mkdir -p "$GOPATH/src/k8s.io" "$GOPATH/bin"
    ln -sfn "$tree" "$GOPATH/src/k8s.io/kubernetes"
    cd "$GOPATH/src/k8s.io/kubernetes"

    # In 1.20 the OpenAPI definitions are generated at build time (Makefile.generated_files):
    # openapi-gen over every package whose Go files carry a +k8s:openapi-gen= tag.
    local openapi_out=pkg/generated/openapi/zz_generated.openapi.go
    if [ ! -f "$openapi_out" ]; then
        log "building openapi-gen"
        go build -o "$GOPATH/bin/openapi-gen" k8s.io/kubernetes/vendor/k8s.io/kube-openapi/cmd/openapi-gen
        local inputs
        # vendor/k8s.io/<repo> are symlinks into staging/src/k8s.io/<repo>, which grep -r does not
        # follow: list staging's files under their vendor/ import path.
        inputs=$(grep -rl --include='*.go' '^// *+k8s:openapi-gen=' . \
            | sed 's|^\./staging/src/|./vendor/|' \
            | grep -v -e '^\./vendor/k8s\.io/code-generator/' -e '^\./vendor/k8s\.io/sample-apiserver/' \
                      -e '^\./_output/' \
            | xargs -n1 dirname | sort -u | sed 's|^\./|k8s.io/kubernetes/|' | paste -sd, -)
        [ -n "$inputs" ] || die "no +k8s:openapi-gen= packages found"
        log "generating OpenAPI definitions ($(tr ',' '\n' <<<"$inputs" | wc -l) packages)"
        "$GOPATH/bin/openapi-gen" \
            --input-dirs "$inputs" \
            --output-package k8s.io/kubernetes/pkg/generated/openapi \
            --output-file-base zz_generated.openapi \
            --go-header-file vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
            --output-base "$GOPATH/src" \
            --report-filename "$work/api-rule-violations.list"
        [ -f "$openapi_out" ] || die "openapi-gen did not write $openapi_out"
    fi

    log "building $COMMAND $KUBE_VERSION (a few minutes cold)"
    local ver_pkgs=(k8s.io/kubernetes/vendor/k8s.io/component-base/version
                    k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version)
    local ldflags="-s -w" pkg build_date
    build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    for pkg in "${ver_pkgs[@]}"; do
        ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=20"
        ldflags+=" -X $pkg.gitCommit=$KUBE_GIT_COMMIT -X $pkg.gitTreeState=clean"
        ldflags+=" -X $pkg.buildDate=$build_date"
    done
    go build -ldflags "$ldflags" -o "$BINARY.tmp" "k8s.io/kubernetes/cmd/$COMMAND"
    mv "$BINARY.tmp" "$BINARY"
    binary_works || die "built $BINARY but it does not run --version"
    # The tree, GOPATH and Go cache take 1.5 GB; keep only the 34 MB tarball for a rebuild.
    cd "$CACHE_DIR"
    rm -rf "$tree" "$GOPATH" "$GOCACHE"
    log "built: $BINARY"
    echo "$BINARY"
}

case "${1:-}" in
    build) build ;;
    path)
        binary_works || die "$BINARY is not built: run scripts/kube-apiserver.sh build $COMMAND"
        echo "$BINARY" ;;
    *) echo "usage: $0 build|path [kube-apiserver|kubectl|kube-scheduler]" >&2; exit 2 ;;
esac
