package httpx

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// isCertificateError reports whether err is a failure to verify the
// server's certificate: a permanent problem until the publisher fixes it.
func isCertificateError(err error) bool {
	var (
		unknownAuth x509.UnknownAuthorityError
		hostname    x509.HostnameError
		invalid     x509.CertificateInvalidError
		verify      *tls.CertificateVerificationError
	)
	return errors.As(err, &unknownAuth) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &verify)
}
