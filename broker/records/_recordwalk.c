/* Walk the records of a v2 batch without building them, as a broker does before an append.
 *
 * walk(records, count, base_timestamp) takes the records section of a batch (decompressed) and
 * checks that it holds exactly `count` well-formed records: every length inside its record, every
 * field ending where its record says it ends, no null header key, offset deltas 0, 1, ..., count - 1,
 * timestamps inside int64, nothing left over. It returns the largest record timestamp, or a tuple
 * (index of the first bad record, or -1 for the batch as a whole; reason).
 *
 * It accepts exactly what broker.records.batch's Python decoder accepts (varints of up to ten bytes
 * with their exact value, a negative key or value length meaning null), plus the offset and
 * timestamp rules; broker/records/record_check.py uses that decoder when this module was not
 * built, and the tests check the two agree on random and mutated batches. The GIL is released
 * for large inputs.
 *
 * spans(records, count) walks the same section for log compaction (broker/records/retain.py) and
 * returns, per record, (start, end, offset delta, timestamp delta, key or None, value is null),
 * or (index of the first bad record, or -1; reason) for bytes that do not hold `count` records.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define GIL_RELEASE_BYTES 65536
#define MAX_VARINT_BYTES 10

typedef __int128 i128;
typedef unsigned __int128 u128;

typedef struct {
    Py_ssize_t index;   /* the bad record, or -1 for the batch */
    const char *reason; /* NULL while everything is valid */
    int64_t max_timestamp;
} walk_result;

/* A zig-zag varint of at most ten bytes ending before `end`, with its exact (up to 70-bit) value. */
static const uint8_t *read_varint(const uint8_t *p, const uint8_t *end, i128 *out)
{
    u128 raw = 0;
    for (int i = 0; i < MAX_VARINT_BYTES && p + i < end; i++) {
        raw |= (u128)(p[i] & 0x7F) << (7 * i);
        if (!(p[i] & 0x80)) {
            u128 magnitude = raw >> 1;
            *out = (raw & 1) ? -(i128)magnitude - 1 : (i128)magnitude;
            return p + i + 1;
        }
    }
    return NULL;
}

/* Skips a key, value or header value: a negative length means null. */
static const uint8_t *skip_optional_bytes(const uint8_t *p, const uint8_t *end, int may_be_null)
{
    i128 length;
    if (!(p = read_varint(p, end, &length)))
        return NULL;
    if (length < 0)
        return may_be_null ? p : NULL;
    if (length > (i128)(end - p))
        return NULL;
    return p + (Py_ssize_t)length;
}

static const char *walk_record(const uint8_t **cursor, const uint8_t *end, Py_ssize_t index,
                               int64_t base_timestamp, int64_t *timestamp)
{
    const uint8_t *p = *cursor;
    i128 length, timestamp_delta, offset_delta, header_count;
    if (!(p = read_varint(p, end, &length)))
        return "its length is cut short";
    if (length < 0 || length > (i128)(end - p))
        return "its length runs past the end of the batch";
    const uint8_t *record_end = p + (Py_ssize_t)length;
    if (p >= record_end)
        return "it is empty";
    p++; /* attributes: unused */
    if (!(p = read_varint(p, record_end, &timestamp_delta)))
        return "its timestamp delta runs past the record";
    if (!(p = read_varint(p, record_end, &offset_delta)))
        return "its offset delta runs past the record";
    if (offset_delta != index)
        return "its offset delta is not its position in the batch";
    if (!(p = skip_optional_bytes(p, record_end, 1)))
        return "its key runs past the record";
    if (!(p = skip_optional_bytes(p, record_end, 1)))
        return "its value runs past the record";
    if (!(p = read_varint(p, record_end, &header_count)) || header_count < 0)
        return "its header count is negative or runs past the record";
    for (i128 h = 0; h < header_count; h++) {
        if (!(p = skip_optional_bytes(p, record_end, 0)))
            return "a header key is null or runs past the record";
        if (!(p = skip_optional_bytes(p, record_end, 1)))
            return "a header value runs past the record";
    }
    if (p != record_end)
        return "its fields end before its length says";
    i128 absolute = (i128)base_timestamp + timestamp_delta;
    if (absolute > INT64_MAX || absolute < INT64_MIN)
        return "its timestamp is outside the 64-bit range";
    *timestamp = (int64_t)absolute;
    *cursor = record_end;
    return NULL;
}

static void walk_records(const uint8_t *p, const uint8_t *end, Py_ssize_t count, int64_t base_timestamp,
                         walk_result *result)
{
    result->max_timestamp = INT64_MIN;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t timestamp;
        if ((result->reason = walk_record(&p, end, i, base_timestamp, &timestamp))) {
            result->index = i;
            return;
        }
        if (timestamp > result->max_timestamp)
            result->max_timestamp = timestamp;
    }
    if (p != end) {
        result->index = -1;
        result->reason = "bytes are left over after the last record";
    }
}

static PyObject *walk(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_timestamp;
    if (!PyArg_ParseTuple(args, "y*nL:walk", &view, &count, &base_timestamp))
        return NULL;
    walk_result result = {-1, NULL, INT64_MIN};
    if (count < 0) {
        result.reason = "the record count is negative";
    } else if (view.len >= GIL_RELEASE_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        walk_records(view.buf, (const uint8_t *)view.buf + view.len, count, base_timestamp, &result);
        Py_END_ALLOW_THREADS
    } else {
        walk_records(view.buf, (const uint8_t *)view.buf + view.len, count, base_timestamp, &result);
    }
    PyBuffer_Release(&view);
    if (result.reason)
        return Py_BuildValue("(ns)", result.index, result.reason);
    return PyLong_FromLongLong(result.max_timestamp);
}

/* One record's span and what compaction needs of it; NULL reason when it is well-formed. */
static const char *span_record(const uint8_t *start, const uint8_t **cursor, const uint8_t *end,
                               PyObject **item)
{
    const uint8_t *p = *cursor;
    i128 length, timestamp_delta, offset_delta, key_length, value_length;
    if (!(p = read_varint(p, end, &length)))
        return "its length is cut short";
    if (length < 0 || length > (i128)(end - p))
        return "its length runs past the end of the batch";
    const uint8_t *record_end = p + (Py_ssize_t)length;
    if (p >= record_end)
        return "it is empty";
    p++; /* attributes: unused */
    if (!(p = read_varint(p, record_end, &timestamp_delta)) || timestamp_delta > INT64_MAX ||
        timestamp_delta < INT64_MIN)
        return "its timestamp delta is invalid";
    if (!(p = read_varint(p, record_end, &offset_delta)) || offset_delta > INT32_MAX || offset_delta < 0)
        return "its offset delta is invalid";
    if (!(p = read_varint(p, record_end, &key_length)) || key_length > (i128)(record_end - p))
        return "its key runs past the record";
    const uint8_t *key = p;
    if (key_length > 0)
        p += (Py_ssize_t)key_length;
    if (!read_varint(p, record_end, &value_length))
        return "its value runs past the record";
    PyObject *key_object = key_length < 0 ? Py_NewRef(Py_None)
                                          : PyBytes_FromStringAndSize((const char *)key, (Py_ssize_t)key_length);
    if (!key_object)
        return "";
    *item = Py_BuildValue("(nnLLNO)", (Py_ssize_t)(*cursor - start), (Py_ssize_t)(record_end - start),
                          (long long)offset_delta, (long long)timestamp_delta, key_object,
                          value_length < 0 ? Py_True : Py_False);
    if (!*item)
        return "";
    *cursor = record_end;
    return NULL;
}

static PyObject *spans(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*n:spans", &view, &count))
        return NULL;
    const uint8_t *start = view.buf, *p = view.buf, *end = start + view.len;
    PyObject *found = PyList_New(0);
    const char *reason = count < 0 ? "the record count is negative" : NULL;
    Py_ssize_t index = -1;
    for (Py_ssize_t i = 0; found && !reason && i < count; i++) {
        PyObject *item = NULL;
        if ((reason = span_record(start, &p, end, &item))) {
            index = i;
        } else if (PyList_Append(found, item) < 0) {
            Py_CLEAR(found);
        }
        Py_XDECREF(item);
    }
    if (found && !reason && p != end)
        reason = "bytes are left over after the last record";
    PyBuffer_Release(&view);
    if (!found || (reason && !*reason) || PyErr_Occurred()) {
        Py_XDECREF(found);
        return NULL;
    }
    if (reason) {
        Py_DECREF(found);
        return Py_BuildValue("(ns)", index, reason);
    }
    return found;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(records, count, base_timestamp): the largest record timestamp, or (record index, reason)."},
    {"spans", spans, METH_VARARGS,
     "spans(records, count): per record (start, end, offset delta, timestamp delta, key, value is null), "
     "or (record index, reason)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_recordwalk", "Checks the records of a v2 batch without decoding them.", -1, methods,
};

PyMODINIT_FUNC PyInit__recordwalk(void)
{
    return PyModule_Create(&module_definition);
}
