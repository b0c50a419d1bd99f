/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of a bytes-like object.
 *
 * crc32c(data)          the fastest path this CPU has: the SSE4.2 crc32 instruction on x86-64
 *                       when the CPU reports it, else the portable path;
 * crc32c_portable(data) slicing-by-8 tables, any CPU.
 *
 * Both release the GIL for large inputs, so the broker's network thread keeps running while a
 * produce request's batches are checked. broker/records/crc.py falls back to crcmod when this
 * module was not built; the tests check all three against each other.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HAVE_SSE42_PATH 1
#endif

#define POLYNOMIAL 0x82F63B78u
#define GIL_RELEASE_BYTES 65536

static uint32_t tables[8][256];

static void build_tables(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int bit = 0; bit < 8; bit++)
            crc = (crc >> 1) ^ (POLYNOMIAL & (0u - (crc & 1u)));
        tables[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            tables[k][n] = (tables[k - 1][n] >> 8) ^ tables[0][tables[k - 1][n] & 0xFF];
}

static uint32_t crc_portable(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint32_t low, high;
        memcpy(&low, p, 4);
        memcpy(&high, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        low = __builtin_bswap32(low);
        high = __builtin_bswap32(high);
#endif
        low ^= crc;
        crc = tables[7][low & 0xFF] ^ tables[6][(low >> 8) & 0xFF] ^ tables[5][(low >> 16) & 0xFF]
              ^ tables[4][low >> 24] ^ tables[3][high & 0xFF] ^ tables[2][(high >> 8) & 0xFF]
              ^ tables[1][(high >> 16) & 0xFF] ^ tables[0][high >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ tables[0][(crc ^ *p++) & 0xFF];
    return crc;
}

#ifdef HAVE_SSE42_PATH
__attribute__((target("sse4.2")))
static uint32_t crc_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t crc64 = crc;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc64 = _mm_crc32_u64(crc64, word);
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)crc64;
    while (n--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#endif

typedef uint32_t (*crc_function)(uint32_t, const unsigned char *, size_t);

static crc_function fastest = crc_portable;

static PyObject *checksum(PyObject *arg, crc_function function)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t crc;
    if (view.len >= GIL_RELEASE_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        crc = function(0xFFFFFFFFu, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = function(0xFFFFFFFFu, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc ^ 0xFFFFFFFFu);
}

static PyObject *crc32c(PyObject *module, PyObject *arg)
{
    return checksum(arg, fastest);
}

static PyObject *crc32c_portable(PyObject *module, PyObject *arg)
{
    return checksum(arg, crc_portable);
}

static PyMethodDef methods[] = {
    {"crc32c", crc32c, METH_O, "CRC-32C of a bytes-like object, with the fastest path this CPU has."},
    {"crc32c_portable", crc32c_portable, METH_O, "CRC-32C of a bytes-like object, with tables only."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_crc32c", "CRC-32C, hardware-accelerated where the CPU allows.", -1, methods,
};

PyMODINIT_FUNC PyInit__crc32c(void)
{
    build_tables();
    const char *implementation = "table";
#ifdef HAVE_SSE42_PATH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        fastest = crc_sse42;
        implementation = "sse4.2";
    }
#endif
    PyObject *module = PyModule_Create(&module_definition);
    if (module == NULL)
        return NULL;
    if (PyModule_AddStringConstant(module, "IMPLEMENTATION", implementation) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
