// Package scheme builds the runtime scheme hypershift's clients use: the
// built-in types, CRDs and the hypershift.dev API.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimachineryruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// New returns a scheme with every type hypershift reads or writes.
func New() *apimachineryruntime.Scheme {
	s := apimachineryruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(hypershiftv1alpha1.AddToScheme(s))
	return s
}
