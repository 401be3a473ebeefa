# The GPU-node emitter: the gpu-node archive (its own jlink Java runtime) on a CUDA base image. The
# NVIDIA container toolkit brings the driver's libcuda.so.1 in: run with --gpus all (compose:
# deploy.resources.reservations.devices; Kubernetes: nvidia.com/gpu). Build from the repository
# root after `mvn -B package -DskipTests` (docker/README.md):
#   docker build -f docker/gpu-node.Dockerfile -t collscope-gpu-node:0.1.0-SNAPSHOT .
FROM nvidia/cuda:12.6.3-base-ubuntu24.04
ARG VERSION=0.1.0-SNAPSHOT
ADD distribution/target/collscope-gpu-node-${VERSION}-linux-x86_64.tar.gz /opt/
RUN ln -s /opt/collscope-gpu-node-${VERSION} /opt/collscope
ENV COLLSCOPE_HOME=/opt/collscope
ENTRYPOINT ["/opt/collscope/bin/collscope"]
CMD ["emit", "--backend", "cuda"]
