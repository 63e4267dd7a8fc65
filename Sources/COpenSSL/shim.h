// OpenSSL's TLS client API (libssl, libcrypto). Swift calls it directly; the one function here
// stands for a macro Swift cannot import.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

/// `SSL_set_tlsext_host_name`, a macro over `SSL_ctrl`: the server name (SNI) sent in the hello.
static inline long cssl_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

/// `SSL_CTX_set_min_proto_version`, a macro over `SSL_CTX_ctrl`.
static inline long cssl_ctx_set_min_proto_version(SSL_CTX *context, int version) {
    return SSL_CTX_set_min_proto_version(context, version);
}

/// Takes a peer's close without close_notify as the end of the stream (`SSL_OP_IGNORE_UNEXPECTED_EOF`),
/// as casters behind proxies do: a macro Swift cannot import.
static inline void cssl_ctx_ignore_unexpected_eof(SSL_CTX *context) {
    SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
}
