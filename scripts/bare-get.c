// scripts/bare-get.c — the floor of one connection: GET a URL into a file with nothing else.
//
//     cc -O2 -o bare-get scripts/bare-get.c && ./bare-get 127.0.0.1 PORT /PATH OUT
//
// One HTTP/1.1 request over plain TCP, the head checked (200, Content-Length), then the body
// received into one 512 KiB buffer and written to OUT, read after write, until Content-Length bytes
// are in. No flush, no redirects, no chunked bodies, no threads: what any client must at least do to
// put a file on this machine, for `scripts/bench` to quote beside the real tools. (Tried here and
// slower: a reader and a writer thread, 0.51-0.55 s for 1 GiB into tmpfs against 0.48-0.51, nginx
// needing the other core; splice(2) through a pipe, 0.63-1.95 s.)
#define _GNU_SOURCE  // strcasestr
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void fail(const char *what) {
    fprintf(stderr, "bare-get: %s\n", what);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 5) fail("usage: bare-get HOST-IPv4 PORT /PATH OUT");
    int sock = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
    if (sock < 0 || inet_pton(AF_INET, argv[1], &address.sin_addr) != 1) fail("bad address");
    if (connect(sock, (struct sockaddr *)&address, sizeof address) != 0) fail("cannot connect");
    char request[1024];
    int length = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n", argv[3], argv[1], argv[2]);
    if (length <= 0 || length >= (int)sizeof request || write(sock, request, (size_t)length) != length) fail("cannot send the request");

    enum { size = 512 << 10 };
    char *buffer = malloc(size + 1);
    if (!buffer) fail("out of memory");
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        if (have == size) fail("response head too long");
        ssize_t count = read(sock, buffer + have, size - have);
        if (count <= 0) fail("connection closed in the response head");
        have += (size_t)count;
        buffer[have] = 0;
        end = strstr(buffer, "\r\n\r\n");
    }
    if (strncmp(buffer, "HTTP/1.1 200 ", 13) != 0) fail("status is not 200");
    char *field = strcasestr(buffer, "\r\nContent-Length:");
    if (!field || field > end) fail("no Content-Length");
    long long left = atoll(field + 17);

    int out = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) fail("cannot create the output file");
    char *body = end + 4;
    size_t count = have - (size_t)(body - buffer);
    for (;;) {
        for (size_t written = 0; written < count;) {
            ssize_t n = write(out, body + written, count - written);
            if (n <= 0) fail("cannot write the output file");
            written += (size_t)n;
        }
        left -= (long long)count;
        if (left <= 0) break;
        ssize_t n = read(sock, buffer, left < size ? (size_t)left : size);
        if (n <= 0) fail("connection closed before the body ended");
        body = buffer;
        count = (size_t)n;
    }
    return close(out) == 0 ? 0 : 1;
}
