"""Host↔device transfers from linear memory access descriptors (seed 002 §4).

``lmad``     CSLMAD/RCSLMAD descriptors and the access analysis of §4.3.
``plan``     descriptors from a Scop and the NumPy arrays of a run; compact device
             buffers and the per-array layouts kernels index them with.
``pack``     host-side packing/unpacking (the same code for the GPU and the emulator).
``kernels``  KIR variants whose array strides and block offsets are kernel ints.
``tiling``   splitting launches whose data exceed ``--device-mem`` (§4.4).
"""
