#ifndef TIPSD_COPENSSL_SHIM_H
#define TIPSD_COPENSSL_SHIM_H
// OpenSSL 3's libcrypto (Debian: libssl-dev, found through pkg-config `openssl`), for verifying JWT signatures in
// TipsAuth: EVP_MAC (HMAC), EVP_DigestVerify (RSA PKCS#1 v1.5 and ECDSA), EVP_PKEY_fromdata (keys from a JWKS's
// n/e and x/y); the bench also makes keys (EVP_PKEY_generate, rsa.h). TipsWebhooks signs with EVP_MAC, encodes with
// EVP_EncodeBlock/EVP_DecodeBlock and draws secrets with RAND_bytes (rand.h). Only the 3.0 API is visible: the
// deprecated low-level calls are hidden.
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

/// EVP_PKEY_PUBLIC_KEY is a macro combining selection bits, which Swift cannot import.
static inline int tipsd_evp_pkey_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }

#endif
