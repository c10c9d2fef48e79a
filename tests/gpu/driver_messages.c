/* driver_messages.c — the messages of a CUDA driver, for checking that
 * tests/fake_libcuda.c says what the real driver says.
 *
 *   driver_messages LIBCUDA        (tests/gpu/run.sh builds and runs it)
 *
 * Opens LIBCUDA with dlopen (a real libcuda.so.1, or the fake's .so) and
 * prints, for each error code libtexrt reports, one line
 *
 *   CODE NAME: the text cuGetErrorString gives, or "(none)"
 *
 * in a fixed order, so that two runs diff line by line.  It needs no GPU
 * and no CUDA header: the codes are CUDA's documented numbers.  Exit
 * status 0, or 1 when LIBCUDA cannot be opened.
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*GetErrorString)(int error, const char **text);

static const struct {
    int code;
    const char *name;
} codes[] = {
    { 0, "CUDA_SUCCESS" },
    { 1, "CUDA_ERROR_INVALID_VALUE" },
    { 2, "CUDA_ERROR_OUT_OF_MEMORY" },
    { 3, "CUDA_ERROR_NOT_INITIALIZED" },
    { 100, "CUDA_ERROR_NO_DEVICE" },
    { 101, "CUDA_ERROR_INVALID_DEVICE" },
    { 200, "CUDA_ERROR_INVALID_IMAGE" },
    { 201, "CUDA_ERROR_INVALID_CONTEXT" },
    { 209, "CUDA_ERROR_NO_BINARY_FOR_GPU" },
    { 218, "CUDA_ERROR_INVALID_PTX" },
    { 400, "CUDA_ERROR_INVALID_HANDLE" },
    { 500, "CUDA_ERROR_NOT_FOUND" },
    { 700, "CUDA_ERROR_ILLEGAL_ADDRESS" },
    { 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" },
    { 719, "CUDA_ERROR_LAUNCH_FAILED" },
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: driver_messages LIBCUDA\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "driver_messages: %s\n", dlerror());
        return 1;
    }
    GetErrorString get = (GetErrorString)dlsym(lib, "cuGetErrorString");
    if (!get) {
        fprintf(stderr, "driver_messages: %s has no cuGetErrorString\n", argv[1]);
        return 1;
    }
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *text = NULL;
        if (get(codes[i].code, &text) != 0 || !text)
            text = "(none)";
        printf("%d %s: %s\n", codes[i].code, codes[i].name, text);
    }
    return 0;
}
