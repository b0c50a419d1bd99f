/* Walk the records of a v2 batch without building them, as a broker does before an append.
 *
 * walk(records, count, base_timestamp) takes the records section of a batch (decompressed) and
 * checks that it holds exactly `count` well-formed records: every length inside its record, every
 * field ending where its record says it ends, no null header key, offset deltas 0, 1, ..., count - 1,
 * timestamps inside int64, nothing left over. It returns the largest record timestamp, or a tuple
 * (index of the first bad record, or -1 for the batch as a whole; reason).
 *
 * spans(records, count) walks the same section for log compaction (broker/records/retain.py) and
 * returns, per record, (start, end, offset delta, timestamp delta, key or None, value is null),
 * or (index of the first bad record, or -1; reason) for bytes that do not hold `count` records.
 *
 * Both read each record with the shared walker (recordwalk.h), whose pure-Python twin is
 * broker/records/record_walk.py; the tests check the two agree on random and mutated batches. The
 * GIL is released for large inputs.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "recordwalk.h"

#define GIL_RELEASE_BYTES 65536

typedef struct {
    Py_ssize_t index;   /* the bad record, or -1 for the batch */
    const char *reason; /* NULL while everything is valid */
    int64_t max_timestamp;
} walk_result;

static const char *walk_record(const uint8_t **cursor, const uint8_t *end, Py_ssize_t index,
                               int64_t base_timestamp, int64_t *timestamp)
{
    rw_record record;
    rw_fault fault = rw_next_record(cursor, end, &record);
    if (fault)
        return rw_reason(fault);
    if (record.offset_delta != index)
        return "its offset delta is not its position in the batch";
    rw_i128 absolute = (rw_i128)base_timestamp + record.timestamp_delta;
    if (absolute > INT64_MAX || absolute < INT64_MIN)
        return "its timestamp is outside the 64-bit range";
    *timestamp = (int64_t)absolute;
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
        result->reason = RW_LEFT_OVER;
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
        result.reason = RW_COUNT_NEGATIVE;
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
    rw_record record;
    rw_fault fault = rw_next_record(cursor, end, &record);
    if (fault)
        return rw_reason(fault);
    if (record.timestamp_delta > INT64_MAX || record.timestamp_delta < INT64_MIN)
        return "its timestamp delta is invalid";
    if (record.offset_delta > INT32_MAX || record.offset_delta < 0)
        return "its offset delta is invalid";
    PyObject *key_object = record.key_length < 0
        ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize((const char *)record.key, (Py_ssize_t)record.key_length);
    if (!key_object)
        return "";
    *item = Py_BuildValue("(nnLLNO)", (Py_ssize_t)(record.start - start), (Py_ssize_t)(record.end - start),
                          (long long)record.offset_delta, (long long)record.timestamp_delta, key_object,
                          record.value_length < 0 ? Py_True : Py_False);
    if (!*item)
        return "";
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
    const char *reason = count < 0 ? RW_COUNT_NEGATIVE : NULL;
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
        reason = RW_LEFT_OVER;
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
