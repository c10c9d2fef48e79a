/* cuda_bf16.h — for tests/cudaemu: __nv_bfloat16 and its conversions are in cudaemu.h. */
