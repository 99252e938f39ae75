package transfersigner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// labelManagedBy is the standard managed-by label, set to the field owner on what the package makes.
const labelManagedBy = "app.kubernetes.io/managed-by"

// Ensure returns the transfer authority kept in the Secret transfer.AuthoritySecret of namespace,
// read with r; when the Secret does not exist it makes a new authority and creates the Secret with w
// (as fieldOwner). When another replica creates it first, that replica's authority is read back. A
// Secret that holds no valid authority is an error: replacing it would void every node's
// certificate, which is left to the admin (delete the Secret).
func Ensure(ctx context.Context, r client.Reader, w client.Writer, namespace, fieldOwner string,
) (*transfer.Authority, error) {
	key := types.NamespacedName{Namespace: namespace, Name: transfer.AuthoritySecret}
	a, err := readAuthority(ctx, r, key)
	if err == nil || !apierrors.IsNotFound(err) {
		return a, err
	}
	if a, err = transfer.NewAuthority(); err != nil {
		return nil, err
	}
	sec := &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: a.SecretData(), Immutable: ptr.To(true)}
	sec.Namespace, sec.Name = key.Namespace, key.Name
	sec.Labels = map[string]string{labelManagedBy: fieldOwner}
	err = w.Create(ctx, sec, client.FieldOwner(fieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return readAuthority(ctx, r, key) // another replica made it first: theirs is the authority
	}
	if err != nil {
		return nil, fmt.Errorf("create the transfer authority Secret %s: %w", key, err)
	}
	return a, nil
}

// readAuthority reads the authority of Secret key; an error that apierrors.IsNotFound when there is
// no such Secret.
func readAuthority(ctx context.Context, r client.Reader, key types.NamespacedName) (*transfer.Authority, error) {
	var sec corev1.Secret
	if err := r.Get(ctx, key, &sec); err != nil {
		return nil, fmt.Errorf("read the transfer authority Secret %s: %w", key, err)
	}
	a, err := transfer.AuthorityFromSecretData(sec.Data)
	if err != nil {
		return nil, fmt.Errorf("the transfer authority Secret %s (delete it to make a new authority, "+
			"which voids every node's transfer certificate): %w", key, err)
	}
	return a, nil
}
