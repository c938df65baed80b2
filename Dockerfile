# syntax=docker/dockerfile:1
# berth's container image: a statically linked release binary on distroless.
#
#   docker build -t REGISTRY/berth:$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1) .
#
# The build stage runs scripts/build-static.sh, the same command CI runs outside Docker
# (scripts/test.sh, tests/static_binary.rs), so the binary CI checks is the one shipped.

# The toolchain berth is developed with; its Debian (bookworm, glibc 2.36) provides the
# static glibc the binary links (glibc >= 2.34 has the files and dns NSS modules built in,
# so name lookups need no shared library at run time).
FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    bash scripts/build-static.sh /out/berth \
    && /out/berth --version

# distroless/static: CA certificates, /etc/passwd with the nonroot user (65532), no shell,
# no libc (the binary needs none).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/berth /berth
USER 65532:65532
# /metrics, /healthz and /readyz (--metrics-bind-address).
EXPOSE 10259
ENTRYPOINT ["/berth", "run"]
