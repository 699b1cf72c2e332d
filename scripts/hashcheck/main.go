// A cross-check oracle for schedboard's pod-template-hash: reads JSON templates (one per line), prints for
// each the spew printout upstream's DeepHashObject hashes and controller.ComputeHash's result, after a
// protobuf round trip (what the controller's informer decodes), with and without the API server's defaults.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/davecgh/go-spew/spew"
	v1 "k8s.io/api/core/v1"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/controller"
)

type input struct {
	Template  json.RawMessage `json:"template"`
	Collision *int32          `json:"collision"`
}

func roundTrip(t v1.PodTemplateSpec) v1.PodTemplateSpec {
	data, err := t.Marshal()
	if err != nil {
		panic(err)
	}
	var out v1.PodTemplateSpec
	if err := out.Unmarshal(data); err != nil {
		panic(err)
	}
	return out
}

func printout(t v1.PodTemplateSpec) string {
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	return printer.Sprintf("%#v", t)
}

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for scanner.Scan() {
		var in input
		if err := json.Unmarshal(scanner.Bytes(), &in); err != nil {
			panic(err)
		}
		var t v1.PodTemplateSpec
		if err := json.Unmarshal(in.Template, &t); err != nil {
			panic(err)
		}
		raw := roundTrip(t)
		tmpl := &v1.PodTemplate{Template: *t.DeepCopy()}
		corev1defaults.SetObjectDefaults_PodTemplate(tmpl)
		defaulted := roundTrip(tmpl.Template)
		dj, _ := json.Marshal(defaulted)
		if err := out.Encode(map[string]interface{}{
			"spew": printout(raw), "hash": controller.ComputeHash(&raw, in.Collision),
			"defaulted": json.RawMessage(dj), "spew_defaulted": printout(defaulted),
			"hash_defaulted": controller.ComputeHash(&defaulted, in.Collision),
		}); err != nil {
			panic(err)
		}
	}
	if err := scanner.Err(); err != nil {
		panic(err)
	}
	fmt.Fprintln(os.Stderr, "done")
}
