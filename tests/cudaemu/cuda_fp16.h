/* cuda_fp16.h — for tests/cudaemu: __half and its conversions are in cudaemu.h. */
