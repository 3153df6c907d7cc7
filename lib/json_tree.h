/* A small JSON reader into a tree, for documents the library reads back
 * whole (a result's JSON). Internal. */
#ifndef BATCHFIT_JSON_TREE_H
#define BATCHFIT_JSON_TREE_H

#include "internal.h"

typedef enum jt_kind { JT_NULL, JT_BOOL, JT_NUMBER, JT_STRING, JT_ARRAY, JT_OBJECT } jt_kind;

typedef struct jt_value {
    jt_kind kind;
    int boolean;
    double number;
    int is_u64;          /* the number was a plain non-negative integer that fits */
    uint64_t u64;
    char *string;        /* JT_STRING: decoded UTF-8, NUL-terminated */
    size_t count;        /* JT_ARRAY, JT_OBJECT */
    struct jt_value *items;
    char **keys;         /* JT_OBJECT */
} jt_value;

/* Parses text (len bytes) into *root. Returns BATCHFIT_OK, BATCHFIT_E_PARSE
 * (err says where and what), or BATCHFIT_E_NO_MEMORY. *root is freed with
 * batchfit__jt_free() on success; on failure nothing is left to free. */
int batchfit__jt_parse(const batchfit_allocator *a, const char *text, size_t len, jt_value *root,
                       char *err, size_t err_len);
void batchfit__jt_free(const batchfit_allocator *a, jt_value *v);
/* The member of an object by key, NULL if absent or v is not an object. */
const jt_value *batchfit__jt_get(const jt_value *v, const char *key);

#endif
