package transfertoken

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// A clone placed on another node than its source volume copies an image of the source, not the live
// volume: every attempt of the copy, and the resume of each, must read the same bytes. The image is a
// read-only snapshot of the source on its node (a thin snapshot in a thin class, a copy-on-write one in
// a thick class), a LogicalVolume the operator creates, controlled by the clone's LogicalVolume (so the
// garbage collector removes it with an abandoned clone), and deletes once the copy is complete.

// ImagePrefix prefixes the name of an image's LogicalVolume; the clone's UID follows.
const ImagePrefix = "lvms-image-"

// Event reasons of an image on the clone's claim.
const (
	ReasonImageFailed = "CopyImageFailed"
)

// needsImage reports whether lv copies through an image of its source.
func needsImage(lv *topolvmv1.LogicalVolume) bool {
	return lv.Spec.SourceNode != "" && lv.Annotations[driver.AnnotationCopyImage] == "true"
}

// imageName is the name of the LogicalVolume of lv's image.
func imageName(lv *topolvmv1.LogicalVolume) string { return ImagePrefix + string(lv.UID) }

// desiredImage is the LogicalVolume of lv's image: a read-only snapshot of lv's source on the
// source's node, as large as lv (a thick snapshot's copy-on-write store then covers a rewrite of the
// whole source while the copy runs).
func desiredImage(lv *topolvmv1.LogicalVolume) *topolvmv1.LogicalVolume {
	name := imageName(lv)
	return &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: topolvmv1.LogicalVolumeSpec{
			Name:        name,
			NodeName:    lv.Spec.SourceNode,
			DeviceClass: lv.Spec.DeviceClass,
			Source:      lv.Spec.Source,
			AccessType:  topolvmv1.AccessTypeReadOnly,
			Size:        lv.Spec.Size,
		},
	}
}

// imageSource is the LV the token of lv's copy names on the source node: lv's source, or for a clone
// its image's LV once the source's node made it ("" while it is being made). For an image that failed
// it is the image's object name, which no LV of ours carries (they are named by UID), so the source's
// agent refuses the copy (NotFound) and the clone fails as a copy from a missing source does (the CSI
// controller deletes it, with its image, and the provisioner retries); the failure is reported on the
// claim.
func (r *Reconciler) imageSource(ctx context.Context, lv *topolvmv1.LogicalVolume) (string, error) {
	if !needsImage(lv) {
		return lv.Spec.Source, nil
	}
	img := &topolvmv1.LogicalVolume{}
	err := r.o.Client.Get(ctx, client.ObjectKey{Name: imageName(lv)}, img)
	switch {
	case apierrors.IsNotFound(err):
		return "", r.createImage(ctx, lv)
	case err != nil:
		return "", fmt.Errorf("read the image of LogicalVolume %s: %w", lv.Name, err)
	case !metav1.IsControlledBy(img, lv):
		return "", fmt.Errorf("LogicalVolume %s exists and is not the image of LogicalVolume %s", img.Name, lv.Name)
	case img.Status.Code != 0:
		r.event(ctx, lv, corev1.EventTypeWarning, ReasonImageFailed,
			"the snapshot of %s on node %s to copy from failed: %s", lv.Spec.Source, lv.Spec.SourceNode,
			img.Status.Message)
		return img.Name, nil
	case img.Status.VolumeID == "":
		return "", nil
	}
	return img.Status.VolumeID, nil
}

// createImage creates the LogicalVolume of lv's image; the image's updates wake lv's reconcile.
func (r *Reconciler) createImage(ctx context.Context, lv *topolvmv1.LogicalVolume) error {
	img := desiredImage(lv)
	if err := controllerutil.SetControllerReference(lv, img, r.o.Client.Scheme()); err != nil {
		return fmt.Errorf("own the image of LogicalVolume %s: %w", lv.Name, err)
	}
	err := r.o.Client.Create(ctx, img, client.FieldOwner(FieldOwner))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the image of LogicalVolume %s: %w", lv.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the image of a clone's source", "logicalVolume", lv.Name,
		"image", img.Name, "source", lv.Spec.Source, "sourceNode", lv.Spec.SourceNode)
	return nil
}

// dropImage deletes the image of lv once its copy is complete.
func (r *Reconciler) dropImage(ctx context.Context, lv *topolvmv1.LogicalVolume) error {
	if !needsImage(lv) {
		return nil
	}
	img := &topolvmv1.LogicalVolume{}
	err := r.o.Client.Get(ctx, client.ObjectKey{Name: imageName(lv)}, img)
	if err != nil || !img.DeletionTimestamp.IsZero() || !metav1.IsControlledBy(img, lv) {
		return client.IgnoreNotFound(err)
	}
	if err := r.o.Client.Delete(ctx, img, client.Preconditions{UID: &img.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete the image of LogicalVolume %s: %w", lv.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted the image of a copied clone", "logicalVolume", lv.Name, "image", img.Name)
	return nil
}
