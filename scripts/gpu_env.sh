# Points a build and its binaries at the dependency folder of scripts/gpu_deps.sh (sourced by
# scripts/gpu_check.sh and scripts/check_gpu_deps.sh): pkg-config through the folder's own
# pkgconf with a sysroot (the .pc files say /usr), the compiler (CPATH), the linker
# (LIBRARY_PATH) and the loader (LD_LIBRARY_PATH). CMake gets GPU_DEPS_CMAKE_ARGS.
#
#   source scripts/gpu_env.sh [FOLDER]     (default: .gpu-deps/root of this repository)
gpu_deps_root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.gpu-deps/root}"
gpu_deps_lib="$gpu_deps_root/usr/lib/x86_64-linux-gnu"
# Some packages (libcom-err2, libkeyutils1) still install into /lib rather than /usr/lib.
gpu_deps_libs="$gpu_deps_lib:$gpu_deps_lib/hdf5/serial:$gpu_deps_root/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$gpu_deps_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LIBRARY_PATH="$gpu_deps_libs"
export PKG_CONFIG_LIBDIR="$gpu_deps_lib/pkgconfig:$gpu_deps_root/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$gpu_deps_root"
# pkgconf leaves out -L/-I of the system's own directories, and with a sysroot those are the
# folder's: named nowhere, the linker would search the system's directories first.
export PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1
export CPATH="$gpu_deps_root/usr/include:$gpu_deps_root/usr/include/hdf5/serial"
GPU_DEPS_PKG_CONFIG="$gpu_deps_root/usr/bin/pkgconf"
GPU_DEPS_CMAKE_ARGS=(-DPKG_CONFIG_EXECUTABLE="$GPU_DEPS_PKG_CONFIG"
  -DCMAKE_PREFIX_PATH="${TORCH_PREFIX:+$TORCH_PREFIX;}$gpu_deps_root/usr;$gpu_deps_lib/cmake"
  -DHDF5_C_INCLUDE_DIRS="$gpu_deps_root/usr/include/hdf5/serial"
  -DHDF5_C_LIBRARIES="$gpu_deps_lib/hdf5/serial/libhdf5.so"
  -DCMAKE_SYSTEM_INCLUDE_PATH="$gpu_deps_root/usr/include")
