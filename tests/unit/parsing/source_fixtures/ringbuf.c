/* ringbuf.c - a fixed-size byte ring buffer. */
#include <stdlib.h>
#include <string.h>

#include "ringbuf.h"

/* A ring buffer over a caller-owned array. */
struct ringbuf {
    unsigned char *data;
    size_t capacity;
    size_t head;
    size_t len;
};

/*
 * Copies up to n bytes into the buffer and returns how many fit.
 */
size_t ringbuf_write(struct ringbuf *rb, const unsigned char *src, size_t n)
{
    size_t written = 0;
    while (written < n && rb->len < rb->capacity) {
        size_t tail = (rb->head + rb->len) % rb->capacity;

        rb->data[tail] = src[written];
        rb->len++;
        written++;
    }
    return written;
}

/* Reads one byte, or returns -1 when the buffer is empty. */
int ringbuf_getc(struct ringbuf *rb)
{
    if (rb->len == 0)
        return -1;

    int c = rb->data[rb->head];
    rb->head = (rb->head + 1) % rb->capacity;
    rb->len--;
    return c;
}
