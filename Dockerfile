# mcp-exec: `mcp-exec serve` over Streamable HTTP on :8080, with the Python rootfs and the
# environments named by ENVIRONMENTS (docs/environments.md).
#
#   podman build --cap-add SYS_ADMIN -t mcp-exec .     # or docker build; see the targets below
#   podman run -d -p 8080:8080 \
#     --security-opt seccomp=packaging/seccomp/mcp-exec-server.json --security-opt unmask=ALL \
#     -e MCP_EXEC_LIMITS=rlimit \
#     -v "$PWD/token:/run/secrets/mcp-exec-token:ro" -e MCP_EXEC_AUTH_TOKEN_FILE=/run/secrets/mcp-exec-token \
#     mcp-exec
#   (plus --security-opt apparmor=unconfined where AppArmor is on; docker: systempaths=unconfined
#   instead of unmask=ALL)
#
# The published image, with the data-science environment baked in beside the default one:
#
#   podman build --cap-add SYS_ADMIN --build-arg ENVIRONMENTS="default data" -t mcp-exec .
#
# docs/deploy.md ("Container", "Environments in the container, the package and Kubernetes")
# gives the reason for each flag and what was verified.
#
# Build arguments:
#   BASE    the Debian 12 image to build on (default debian:12; without a registry, make one with
#           `mmdebstrap --variant=minbase bookworm base.tar && podman import base.tar debian:12`)
#   JOBS    ninja's parallel jobs (default: ninja's own, from the number of CPUs)
#   ENVIRONMENTS  the environments to bake in, names separated by spaces or commas (default
#           "default"; `default` is always built, whether named or not). Each is built from its
#           recipe (rootfs/environments/NAME/) by `tools/build-rootfs --environment NAME` in the
#           `rootfs` stage; `default` goes to /var/lib/mcp-exec/rootfs (MCP_EXEC_ROOTFS), every
#           other NAME to /var/lib/mcp-exec/environments/NAME, the directory beside the rootfs
#           that the server offers environments from. "default data" adds 994 MB (`data`'s image)
#           and about 80 to 250 s of build. Only the default target reads it: the prebuilt
#           targets take their environments from the build context (.environments/, below).
#
# The sandbox's images come from their recipes (rootfs/, tools/build-rootfs), one source for the
# host and the image, in one of two ways:
#   default (the last stage, `image`): the recipes run in the `rootfs` stage, as on a host. It
#           needs the Debian mirror, and mount: mmdebstrap as root mounts /proc and /dev into the
#           tree it builds, so the build needs `--cap-add SYS_ADMIN` (podman, buildah). Docker's
#           BuildKit grants no capability to a plain RUN: use the target below there (no Docker
#           engine could run where this was written, so Docker builds are untried).
#   --target image-prebuilt-rootfs: the trees tools/build-rootfs already built on this host (they
#           are cached there), copied into the build context: the rootfs as .rootfs/ and each
#           other environment NAME as .environments/NAME/ (tests/deploy/container-check does
#           this). .environments/ is in the checkout with only a README (which .dockerignore
#           keeps out), because a COPY of a path the context lacks fails: without environments
#           the image offers `default` alone. No network, no privilege, and no second build of
#           the images (about 80 s and 520 MB of downloads for the rootfs), which is what CI can
#           afford. The selection is a target rather than a build argument because buildah 1.28
#           (Debian 12's podman) does not resolve a stage named by an argument
#           (`FROM rootfs-${ROOTFS}`).
#   --target image-prebuilt: the prebuilt images as above, and the binary too: the tree
#           tools/build-deb installs (the Debian package's contents, `dpkg-deb -x` of it) in the
#           context as .install/, instead of the `build` stage's compile (9 to 14 minutes on 2
#           cores). tests/deploy/container-check builds this one, in CI. The package is built
#           with Debian's flags (-O2 -g, hardening) and stripped; the `build` stage's binary is
#           -O2 without debug information, stripped: the same sources and meson set-up.
# Every target assembles its files but the images in the same way (packaging/container/
# runtime-tree, in the runtime-tree stages), and shares the `runtime` stage's configuration.

ARG BASE=debian:12

# The binary, compiled and installed by the project's own meson set-up (packaging/meson.build):
# --prefix=/usr gives the layout the Debian package and deploy/kubernetes use, with the rootfs
# at /var/lib/mcp-exec/rootfs.
FROM ${BASE} AS build
ARG JOBS=
COPY tools/setup /src/tools/setup
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $(/src/tools/setup --print-build-packages) \
 && rm -rf /var/lib/apt/lists/*
# Only what the build reads (the context may hold .rootfs/, 520 MB, and .environments/).
COPY meson.build meson_options.txt /src/
COPY src /src/src
COPY seccomp-profiles /src/seccomp-profiles
COPY packaging /src/packaging
COPY rootfs /src/rootfs
COPY tools /src/tools
# -O2 without debug information, stripped: the tree's own default (debugoptimized) is -O2, what
# the suites run; -O3 (buildtype=release) trips gcc 12's false -Wrestrict in <string>, an error
# under the project's werror.
RUN meson setup /build /src --prefix=/usr -Doptimization=2 -Ddebug=false -Dtests=false -Dunity=on \
 && ninja -C /build ${JOBS:+-j$JOBS} \
 && meson install -C /build --destdir /install --strip --quiet
# The images, built from their recipes by tools/build-rootfs exactly as on a host (in a cache of
# this stage's own, so that it never touches a host's trees): the rootfs (`default`) at /rootfs,
# each other environment of ENVIRONMENTS at /environments/NAME. `default` has a step of its own,
# before ENVIRONMENTS is read, so that changing the argument rebuilds only the others.
FROM ${BASE} AS rootfs
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap
COPY rootfs /src/rootfs
COPY tools/build-rootfs /src/tools/build-rootfs
RUN MCP_EXEC_CACHE=/cache /src/tools/build-rootfs --out /src/build/rootfs \
 && mv "$(readlink /src/build/rootfs)" /rootfs
ARG ENVIRONMENTS=default
# Names separated by spaces or commas, each built once. A name without a recipe fails the build
# before anything is built, naming the known ones (tools/build-rootfs --list).
RUN set -ef; known=$(/src/tools/build-rootfs --list | tr '\n' ' '); \
    for name in $(echo "$ENVIRONMENTS" | tr ',' ' '); do \
      case " $known " in *" $name "*) ;; \
        *) echo "ENVIRONMENTS: no environment '$name' (known: ${known% })" >&2; exit 1 ;; esac; \
    done; \
    mkdir /environments; built=default; \
    for name in $(echo "$ENVIRONMENTS" | tr ',' ' '); do \
      case " $built " in *" $name "*) continue ;; esac; \
      built="$built $name"; \
      MCP_EXEC_CACHE=/cache /src/tools/build-rootfs --environment "$name" \
        --out "/src/build/environments/$name"; \
      mv "$(readlink "/src/build/environments/$name")" "/environments/$name"; \
    done; \
    echo "rootfs stage: environments $built"

# /runtime, the files of the image but the rootfs, from an installed tree at /install: the
# `build` stage's, or for `image-prebuilt` one from the build context. One stage does it for
# both, so that the two images cannot differ in anything but how the binary was compiled. It
# has no libc of its own: the binary's shared libraries (libstdc++, libseccomp and libcap are
# linked statically; libc, libm and the loader remain), at their paths.
FROM ${BASE} AS runtime-tree
COPY packaging/container/runtime-tree /usr/local/sbin/runtime-tree

FROM runtime-tree AS runtime-tree-source
COPY --from=build /install/ /install/
RUN runtime-tree /install /runtime

# The tree tools/build-deb installs (`meson install --destdir`, --prefix=/usr; the .deb's
# contents), copied into the build context as .install/ (tests/deploy/container-check does this,
# with `dpkg-deb -x`): no compiler and no compile in the image build, which is what CI can afford.
FROM runtime-tree AS runtime-tree-prebuilt
COPY .install/ /install/
RUN runtime-tree /install /runtime

# What every image shares: FROM scratch, so an image is the rootfs plus the binary and its libc.
# The server needs no shell, no package manager and no writable path: every sandbox gets the
# rootfs read-only, a fresh /proc and /dev, and a tmpfs workspace. The targets below add the
# files, from runtime-tree-source or runtime-tree-prebuilt, then the rootfs and the other
# environments' images (an empty /var/lib/mcp-exec/environments when there are none).
FROM scratch AS runtime
# 65532: the conventional "nonroot" uid, as in deploy/kubernetes. The server runs rootless: each
# sandbox's user maps to it, and it needs no capability.
USER 65532:65532
ENV PATH=/usr/bin
EXPOSE 8080
# HTTP on every address of the container: flags rather than MCP_EXEC_TRANSPORT and
# MCP_EXEC_ADDR, so that `podman run -i IMAGE serve` is stdio, as the binary's own default. Off
# loopback the server refuses to start without a token: MCP_EXEC_AUTH_TOKEN_FILE (a mounted
# secret, mode 0400 or 0440) or MCP_EXEC_AUTH_TOKEN; or MCP_EXEC_ALLOW_UNAUTHENTICATED=1.
ENTRYPOINT ["mcp-exec"]
CMD ["serve", "--transport", "http", "--addr", ":8080"]

FROM runtime AS image-prebuilt
COPY --from=runtime-tree-prebuilt /runtime/ /
COPY .rootfs/ /var/lib/mcp-exec/rootfs/
COPY .environments/ /var/lib/mcp-exec/environments/

FROM runtime AS image-prebuilt-rootfs
COPY --from=runtime-tree-source /runtime/ /
COPY .rootfs/ /var/lib/mcp-exec/rootfs/
COPY .environments/ /var/lib/mcp-exec/environments/

FROM runtime AS image
COPY --from=runtime-tree-source /runtime/ /
COPY --from=rootfs /rootfs/ /var/lib/mcp-exec/rootfs/
COPY --from=rootfs /environments/ /var/lib/mcp-exec/environments/
