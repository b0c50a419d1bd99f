/*
 * _fastdecode: the per-record hot path of spark_kafka_source.arrow_records.
 *
 * ``Columns`` accumulates Arrow column buffers (offsets, timestamps, timestamp types, key and value
 * offsets/data/validity, and the headers list when asked) across every batch of one decode() call.
 * Python hands it each v2 batch (whose header C reads) with its decompressed records payload with
 * ``add_v2``, and each legacy record with ``append``; ``finish`` gives the buffers back for pa.Array.from_buffers.
 *
 * The records are read by the shared record walker (broker/records/recordwalk.h), which accepts
 * and rejects exactly what its pure-Python twin (broker.records.record_walk, behind the fallback
 * path's decoder) does, so both paths agree on every input.
 * Every record of a batch is parsed (validated); only those whose offset is in [start, end) are
 * kept. A kept record's timestamp must fit timestamp[us] (|ms| <= 9223372036854775).
 *
 * Errors from malformed input raise DecodeError (a ValueError); the Python wrapper maps it to
 * CorruptRecordError. CRCs are checked before a payload gets here, by the Python walk over the
 * batches (broker.records.crc: CRC-32C from the _crc32c extension, crcmod when it is not built;
 * skipped with check_crcs=False).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recordwalk.h"

typedef rw_i128 i128;

/* Kafka epoch milliseconds that still fit int64 microseconds. */
#define TS_MS_MAX INT64_C(9223372036854775)
#define TS_MS_MIN (-TS_MS_MAX)

static PyObject *DecodeError;

/* ------------------------------------------------------------------------------------------- */
/* Buffer: a read-only malloc'd block exported through the buffer protocol (zero-copy for Arrow) */

typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t len;
} BufferObject;

static void
Buffer_dealloc(BufferObject *self)
{
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Buffer_getbuffer(BufferObject *self, Py_buffer *view, int flags)
{
    static char empty[1];
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : empty, self->len, 1,
                             flags);
}

static Py_ssize_t
Buffer_length(BufferObject *self)
{
    return self->len;
}

static PyBufferProcs Buffer_as_buffer = {(getbufferproc)Buffer_getbuffer, NULL};
static PySequenceMethods Buffer_as_sequence = {.sq_length = (lenfunc)Buffer_length};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "spark_kafka_source._fastdecode.Buffer",
    .tp_basicsize = sizeof(BufferObject),
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_as_sequence = &Buffer_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A read-only block of memory owned by this object (an Arrow buffer's storage).",
};

/* ------------------------------------------------------------------------------------------- */
/* Growable vectors and lazily materialised validity bitmaps                                    */

typedef struct {
    char *p;
    size_t len, cap;
} Vec;

static int
vec_grow(Vec *v, size_t need)
{
    size_t want = v->len + need;
    size_t cap = v->cap ? v->cap : 256;
    if (want < v->len) {
        PyErr_NoMemory();
        return -1;
    }
    while (cap < want)
        cap = (cap > SIZE_MAX / 2) ? want : cap * 2;
    char *np = realloc(v->p, cap);
    if (!np) {
        PyErr_NoMemory();
        return -1;
    }
    v->p = np;
    v->cap = cap;
    return 0;
}

static inline int
vec_reserve(Vec *v, size_t need)
{
    return (v->cap - v->len >= need) ? 0 : vec_grow(v, need);
}

static inline int
vec_put(Vec *v, const void *src, size_t n)
{
    if (vec_reserve(v, n) < 0)
        return -1;
    if (n)
        memcpy(v->p + v->len, src, n);
    v->len += n;
    return 0;
}

static inline int
vec_put_i32(Vec *v, int32_t x)
{
    return vec_put(v, &x, sizeof x);
}

static inline int
vec_put_i64(Vec *v, int64_t x)
{
    return vec_put(v, &x, sizeof x);
}

static void
vec_free(Vec *v)
{
    free(v->p);
    v->p = NULL;
    v->len = v->cap = 0;
}

/* A validity bitmap that only exists once a null has been appended (all valid until then). */
typedef struct {
    Vec bits;
    Py_ssize_t nulls;
} Bitmap;

static int
bitmap_cover(Bitmap *b, size_t index, uint8_t fill)
{
    size_t need = index / 8 + 1;
    if (b->bits.len < need) {
        if (vec_reserve(&b->bits, need - b->bits.len) < 0)
            return -1;
        memset(b->bits.p + b->bits.len, fill, need - b->bits.len);
        b->bits.len = need;
    }
    return 0;
}

static inline int
bitmap_valid(Bitmap *b, size_t index)
{
    if (b->nulls == 0)
        return 0;
    if (bitmap_cover(b, index, 0) < 0)
        return -1;
    b->bits.p[index / 8] |= (char)(1u << (index % 8));
    return 0;
}

static int
bitmap_null(Bitmap *b, size_t index)
{
    if (b->nulls == 0 && index > 0) {
        /* first null: every earlier slot was valid */
        if (bitmap_cover(b, index - 1, 0xFF) < 0)
            return -1;
        if ((index % 8) != 0)
            b->bits.p[index / 8] &= (char)((1u << (index % 8)) - 1);
    }
    if (bitmap_cover(b, index, 0) < 0)
        return -1;
    b->bits.p[index / 8] &= (char)~(1u << (index % 8));
    b->nulls++;
    return 0;
}

/* A binary / string column: int32 offsets (starting with 0), data, validity. */
typedef struct {
    Vec offsets, data;
    Bitmap valid;
} BinCol;

static int
bincol_init(BinCol *c)
{
    return vec_put_i32(&c->offsets, 0);
}

static void
bincol_free(BinCol *c)
{
    vec_free(&c->offsets);
    vec_free(&c->data);
    vec_free(&c->valid.bits);
}

static int
bincol_append(BinCol *c, size_t index, const uint8_t *p, int64_t len)
{
    if (len < 0) {
        if (bitmap_null(&c->valid, index) < 0)
            return -1;
    } else {
        if ((uint64_t)len > (uint64_t)INT32_MAX - c->data.len) {
            PyErr_SetString(PyExc_OverflowError,
                            "more than 2 GiB of data in one binary column: decode a smaller range");
            return -1;
        }
        if (vec_put(&c->data, p, (size_t)len) < 0 || bitmap_valid(&c->valid, index) < 0)
            return -1;
    }
    return vec_put_i32(&c->offsets, (int32_t)c->data.len);
}

/* Header keys are UTF-8 strings; invalid UTF-8 is replaced exactly as bytes.decode("utf-8",
 * "replace") does (which is what the pure-Python decoder does). */
static int
bincol_append_utf8(BinCol *c, size_t index, const uint8_t *p, int64_t len)
{
    int64_t i;
    for (i = 0; i < len; i++)
        if (p[i] & 0x80)
            break;
    if (i == len)
        return bincol_append(c, index, p, len);
    PyObject *u = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)len, "replace");
    if (!u)
        return -1;
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(u, &n);
    int rc = s ? bincol_append(c, index, (const uint8_t *)s, n) : -1;
    Py_DECREF(u);
    return rc;
}

/* ------------------------------------------------------------------------------------------- */
/* Columns                                                                                      */

typedef struct {
    PyObject_HEAD
    int include_headers;
    int state; /* 0 usable, 1 finished, 2 broken by an error part-way through an append */
    size_t n;
    Vec offsets;    /* int64 */
    Vec timestamps; /* int64, microseconds */
    Vec ts_types;   /* int32 */
    BinCol key, value;
    /* headers: list<struct<key: string, value: binary>>, a null list for "no headers" */
    Vec hl_offsets; /* int32, n + 1 */
    Bitmap hl_valid;
    size_t nh;
    BinCol hkey, hvalue;
} ColumnsObject;

static void
Columns_release(ColumnsObject *self)
{
    vec_free(&self->offsets);
    vec_free(&self->timestamps);
    vec_free(&self->ts_types);
    bincol_free(&self->key);
    bincol_free(&self->value);
    vec_free(&self->hl_offsets);
    vec_free(&self->hl_valid.bits);
    bincol_free(&self->hkey);
    bincol_free(&self->hvalue);
}

static void
Columns_dealloc(ColumnsObject *self)
{
    Columns_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Columns_init(ColumnsObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"include_headers", NULL};
    int include_headers = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|p", kwlist, &include_headers))
        return -1;
    Columns_release(self);
    memset(&self->include_headers, 0, sizeof(ColumnsObject) - offsetof(ColumnsObject, include_headers));
    self->include_headers = include_headers;
    if (bincol_init(&self->key) < 0 || bincol_init(&self->value) < 0 ||
        vec_put_i32(&self->hl_offsets, 0) < 0 || bincol_init(&self->hkey) < 0 ||
        bincol_init(&self->hvalue) < 0)
        return -1;
    return 0;
}

static int
check_usable(ColumnsObject *self)
{
    if (self->state == 0 && self->key.offsets.p != NULL)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, self->state == 1 ? "Columns already finished"
                                        : self->state == 2 ? "Columns broken by an earlier error"
                                                           : "Columns not initialised");
    return -1;
}

static int
check_timestamp(i128 ts_ms, int64_t offset)
{
    if (ts_ms >= TS_MS_MIN && ts_ms <= TS_MS_MAX)
        return 0;
    if (ts_ms >= INT64_MIN && ts_ms <= INT64_MAX)
        PyErr_Format(DecodeError,
                     "timestamp %lld ms of the record at offset %lld is outside the range of "
                     "timestamp[us]",
                     (long long)ts_ms, (long long)offset);
    else
        PyErr_Format(DecodeError,
                     "timestamp of the record at offset %lld is beyond int64 milliseconds",
                     (long long)offset);
    return -1;
}

/* Append one record that is known to be well formed. Headers: hcount of them at hp (already
 * validated), ignored unless include_headers. */
static int
append_record(ColumnsObject *self, int64_t offset, int64_t ts_ms, int32_t ts_type,
              const uint8_t *key, int64_t klen, const uint8_t *value, int64_t vlen,
              const uint8_t *hp, const uint8_t *he, int64_t hcount)
{
    size_t idx = self->n;
    if (vec_put_i64(&self->offsets, offset) < 0 ||
        vec_put_i64(&self->timestamps, ts_ms * 1000) < 0 ||
        vec_put_i32(&self->ts_types, ts_type) < 0 ||
        bincol_append(&self->key, idx, key, klen) < 0 ||
        bincol_append(&self->value, idx, value, vlen) < 0)
        return -1;
    if (self->include_headers) {
        if (hcount == 0) {
            if (bitmap_null(&self->hl_valid, idx) < 0)
                return -1;
        } else {
            if (bitmap_valid(&self->hl_valid, idx) < 0)
                return -1;
            for (int64_t h = 0; h < hcount; h++) {
                /* already validated by parse_records; re-checked so a bug cannot overrun */
                int64_t hk = 0, hv = -1;
                if (!(hp = rw_read_length(hp, he, &hk)) || hk < 0 || hk > he - hp) {
                    PyErr_SetString(DecodeError, "internal error: header re-read failed");
                    return -1;
                }
                if (bincol_append_utf8(&self->hkey, self->nh, hp, hk) < 0)
                    return -1;
                hp += hk;
                if (!(hp = rw_read_length(hp, he, &hv)) || hv > he - hp) {
                    PyErr_SetString(DecodeError, "internal error: header re-read failed");
                    return -1;
                }
                if (bincol_append(&self->hvalue, self->nh, hp, hv) < 0)
                    return -1;
                if (hv > 0)
                    hp += hv;
                self->nh++;
            }
            if (self->nh > (size_t)INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError,
                                "more than 2**31 headers in one call: decode a smaller range");
                return -1;
            }
        }
        if (vec_put_i32(&self->hl_offsets, (int32_t)self->nh) < 0)
            return -1;
    }
    self->n++;
    return 0;
}

#define FAIL(...)                                  \
    do {                                           \
        PyErr_Format(DecodeError, __VA_ARGS__);    \
        return -1;                                 \
    } while (0)

/* Kafka's timestamp type ids (the timestampType column). */
#define CREATE_TIME 0
#define LOG_APPEND_TIME 1

/* Parse the records of a v2 batch (its header h, its records payload buf); keep those with offset in
 * [start, end). */
static int
parse_records(ColumnsObject *self, const rw_batch_header *h, const uint8_t *buf, Py_ssize_t size,
              int64_t start, int64_t end, Py_ssize_t *kept)
{
    const uint8_t *p = buf, *e = buf + size;
    Py_ssize_t count = h->records_count;
    int32_t ts_type = h->log_append_time ? LOG_APPEND_TIME : CREATE_TIME;
    if (count < 0)
        FAIL("the batch is invalid: " RW_COUNT_NEGATIVE);
    /* Reserve for the whole batch up front (fewer reallocs): a record takes at least 7 bytes,
     * and its value at most what is left of the payload. Bounded by the payload's real size. */
    size_t most = (size_t)size / 7 + 1;
    if ((size_t)count < most)
        most = (size_t)count;
    if (vec_reserve(&self->offsets, most * 8) < 0 || vec_reserve(&self->timestamps, most * 8) < 0 ||
        vec_reserve(&self->ts_types, most * 4) < 0 ||
        vec_reserve(&self->key.offsets, most * 4) < 0 ||
        vec_reserve(&self->value.offsets, most * 4) < 0 ||
        vec_reserve(&self->value.data, (size_t)size) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        rw_record r;
        rw_fault fault = rw_next_record(&p, e, &r);
        if (fault)
            FAIL("record %zd is invalid: %s", i, rw_reason(fault));
        i128 offset = (i128)h->base_offset + r.offset_delta;
        if (offset >= start && offset < end) {
            i128 ts = h->log_append_time ? (i128)h->max_timestamp : (i128)h->base_timestamp + r.timestamp_delta;
            if (check_timestamp(ts, (int64_t)offset) < 0)
                return -1;
            if (append_record(self, (int64_t)offset, (int64_t)ts, ts_type, r.key, r.key_length,
                              r.value, r.value_length, r.headers, r.end, r.header_count) < 0) {
                self->state = 2;
                return -1;
            }
            (*kept)++;
        }
    }
    if (p != e)
        FAIL("the batch is invalid: " RW_LEFT_OVER);
    return 0;
}

PyDoc_STRVAR(Columns_add_v2_doc,
"add_v2(batch, payload, start, end) -> int\n\n"
"Parse the records of one v2 batch (its header is read from `batch`; `payload` is its decompressed\n"
"records section) and append those with offset in [start, end). LogAppendTime batches report\n"
"maxTimestamp for every record. Returns how many were appended; raises DecodeError on malformed\n"
"records.");

static PyObject *
Columns_add_v2(ColumnsObject *self, PyObject *args)
{
    Py_buffer bb, pb;
    Py_ssize_t kept = 0;
    long long start, end;
    rw_batch_header header;
    if (check_usable(self) < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "y*y*LL:add_v2", &bb, &pb, &start, &end))
        return NULL;
    int rc = rw_read_batch_header((const uint8_t *)bb.buf, (size_t)bb.len, &header);
    PyBuffer_Release(&bb);
    if (rc < 0) {
        PyErr_SetString(DecodeError, "the batch is invalid: its header is cut short");
    } else {
        rc = parse_records(self, &header, (const uint8_t *)pb.buf, pb.len, start, end, &kept);
    }
    PyBuffer_Release(&pb);
    if (rc < 0)
        return NULL;
    return PyLong_FromSsize_t(kept);
}

PyDoc_STRVAR(Columns_append_doc,
"append(offset, timestamp_ms, timestamp_type, key, value)\n\n"
"Append one record without headers (a legacy message); key and value are bytes-like or None.");

static PyObject *
Columns_append(ColumnsObject *self, PyObject *args)
{
    long long offset, ts;
    int ts_type;
    PyObject *key, *value;
    Py_buffer kb = {0}, vb = {0};
    int rc = -1;
    if (check_usable(self) < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "LLiOO:append", &offset, &ts, &ts_type, &key, &value))
        return NULL;
    if (check_timestamp(ts, offset) < 0)
        return NULL;
    if (key != Py_None && PyObject_GetBuffer(key, &kb, PyBUF_SIMPLE) < 0)
        return NULL;
    if (value != Py_None && PyObject_GetBuffer(value, &vb, PyBUF_SIMPLE) < 0)
        goto done;
    rc = append_record(self, offset, ts, ts_type, (const uint8_t *)kb.buf,
                       key == Py_None ? -1 : kb.len, (const uint8_t *)vb.buf,
                       value == Py_None ? -1 : vb.len, NULL, NULL, 0);
    if (rc < 0)
        self->state = 2;
done:
    if (kb.obj)
        PyBuffer_Release(&kb);
    if (vb.obj)
        PyBuffer_Release(&vb);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Hand a vector's memory to a new Buffer object (the vector is left empty). */
static PyObject *
take(Vec *v)
{
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (!b)
        return NULL;
    if (v->p && v->cap > v->len + v->len / 8 + 4096) {
        /* give back what the per-batch reservations did not use (mremap for large blocks) */
        char *np = realloc(v->p, v->len ? v->len : 1);
        if (np) {
            v->p = np;
            v->cap = v->len;
        }
    }
    b->data = v->p;
    b->len = (Py_ssize_t)v->len;
    v->p = NULL;
    v->len = v->cap = 0;
    return (PyObject *)b;
}

static PyObject *
take_bitmap(Bitmap *bm, size_t n)
{
    if (bm->nulls == 0)
        Py_RETURN_NONE;
    if (n > 0 && bitmap_cover(bm, n - 1, 0) < 0)
        return NULL;
    return take(&bm->bits);
}

PyDoc_STRVAR(Columns_finish_doc,
"finish() -> tuple\n\n"
"The accumulated buffers, handed over (the object cannot be used afterwards):\n"
"(n, offsets, timestamps, timestamp_types,\n"
" key_validity, key_nulls, key_offsets, key_data,\n"
" value_validity, value_nulls, value_offsets, value_data)\n"
"and, with include_headers, also\n"
"(headers_validity, headers_nulls, headers_offsets, header_count,\n"
" header_key_offsets, header_key_data,\n"
" header_value_validity, header_value_nulls, header_value_offsets, header_value_data).\n"
"A validity bitmap is None when its column has no nulls.");

static PyObject *
Columns_finish(ColumnsObject *self, PyObject *Py_UNUSED(ignored))
{
    if (check_usable(self) < 0)
        return NULL;
    size_t n = self->n;
    PyObject *t = PyTuple_New(self->include_headers ? 22 : 12);
    if (!t)
        return NULL;
    PyObject *items[22] = {0};
    int k = 0;
    items[k++] = PyLong_FromSize_t(n);
    items[k++] = take(&self->offsets);
    items[k++] = take(&self->timestamps);
    items[k++] = take(&self->ts_types);
    items[k++] = take_bitmap(&self->key.valid, n);
    items[k++] = PyLong_FromSsize_t(self->key.valid.nulls);
    items[k++] = take(&self->key.offsets);
    items[k++] = take(&self->key.data);
    items[k++] = take_bitmap(&self->value.valid, n);
    items[k++] = PyLong_FromSsize_t(self->value.valid.nulls);
    items[k++] = take(&self->value.offsets);
    items[k++] = take(&self->value.data);
    if (self->include_headers) {
        items[k++] = take_bitmap(&self->hl_valid, n);
        items[k++] = PyLong_FromSsize_t(self->hl_valid.nulls);
        items[k++] = take(&self->hl_offsets);
        items[k++] = PyLong_FromSize_t(self->nh);
        items[k++] = take(&self->hkey.offsets);
        items[k++] = take(&self->hkey.data);
        items[k++] = take_bitmap(&self->hvalue.valid, self->nh);
        items[k++] = PyLong_FromSsize_t(self->hvalue.valid.nulls);
        items[k++] = take(&self->hvalue.offsets);
        items[k++] = take(&self->hvalue.data);
    }
    self->state = 1;
    for (int i = 0; i < k; i++) {
        if (!items[i]) {
            for (int j = 0; j < k; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(t);
            return NULL;
        }
    }
    for (int i = 0; i < k; i++)
        PyTuple_SET_ITEM(t, i, items[i]);
    return t;
}

static PyObject *
Columns_len_get(ColumnsObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSize_t(self->n);
}

static PyMethodDef Columns_methods[] = {
    {"add_v2", (PyCFunction)Columns_add_v2, METH_VARARGS, Columns_add_v2_doc},
    {"append", (PyCFunction)Columns_append, METH_VARARGS, Columns_append_doc},
    {"finish", (PyCFunction)Columns_finish, METH_NOARGS, Columns_finish_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Columns_getset[] = {
    {"count", (getter)Columns_len_get, NULL, "records appended so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "spark_kafka_source._fastdecode.Columns",
    .tp_basicsize = sizeof(ColumnsObject),
    .tp_dealloc = (destructor)Columns_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Columns(include_headers=False): Arrow column buffers accumulated across batches.",
    .tp_methods = Columns_methods,
    .tp_getset = Columns_getset,
    .tp_init = (initproc)Columns_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------------------------- */

static PyMethodDef module_methods[] = {
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    "spark_kafka_source._fastdecode",
    "C hot path of spark_kafka_source.arrow_records: v2 record parsing into Arrow buffers.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__fastdecode(void)
{
    if (PyType_Ready(&BufferType) < 0 || PyType_Ready(&ColumnsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    DecodeError = PyErr_NewExceptionWithDoc(
        "spark_kafka_source._fastdecode.DecodeError",
        "Malformed record bytes (mapped to CorruptRecordError by arrow_records).",
        PyExc_ValueError, NULL);
    if (!DecodeError)
        goto error;
    Py_INCREF(DecodeError);
    if (PyModule_AddObject(m, "DecodeError", DecodeError) < 0) {
        Py_DECREF(DecodeError);
        goto error;
    }
    Py_INCREF(&ColumnsType);
    if (PyModule_AddObject(m, "Columns", (PyObject *)&ColumnsType) < 0) {
        Py_DECREF(&ColumnsType);
        goto error;
    }
    Py_INCREF(&BufferType);
    if (PyModule_AddObject(m, "Buffer", (PyObject *)&BufferType) < 0) {
        Py_DECREF(&BufferType);
        goto error;
    }
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
