package dashboard

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// resourceRow is an agent, SIP trunk or number list as the platform team
// declared it, with whether it is Ready and why not.
type resourceRow struct {
	Name    string
	Details []string
	Ready   bool
	Why     string
	// Sample is where a sample of an agent's voice plays from; empty for
	// other resources, or without a voice.
	Sample string
	// Conditions are all of them, for the curious.
	Conditions []metav1.Condition
}

func readiness(row *resourceRow, conds []metav1.Condition) {
	row.Conditions = conds
	row.Why = "not reconciled yet"
	for _, c := range conds {
		if c.Type == switchboardv1.ReadyCondition {
			row.Ready = c.Status == metav1.ConditionTrue
			row.Why = strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
}

type resourcesData struct {
	Kind string // as kubectl names it
	Rows []resourceRow
}

func (d *dashboard) renderResources(w http.ResponseWriter, r *http.Request, title, nav, kind string, rows []resourceRow) {
	slices.SortFunc(rows, func(a, b resourceRow) int { return strings.Compare(a.Name, b.Name) })
	d.render(w, r, http.StatusOK, "resources.html", page{Title: title, Nav: nav, Data: resourcesData{Kind: kind, Rows: rows}})
}

func (d *dashboard) listAgents(w http.ResponseWriter, r *http.Request) {
	var list switchboardv1.AgentList
	if err := d.cfg.Cache.List(r.Context(), &list, client.InNamespace(organization(r.Context()))); err != nil {
		d.unavailable(w, r, err, "The agents could not be listed")
		return
	}
	rows := make([]resourceRow, len(list.Items))
	for i := range list.Items {
		a := &list.Items[i]
		rows[i] = resourceRow{Name: a.Name, Details: []string{"id " + a.ResolvedID(), "from " + a.Spec.FromNumber}}
		if len(a.Spec.RequiredVariables) > 0 {
			rows[i].Details = append(rows[i].Details, "requires "+strings.Join(a.Spec.RequiredVariables, ", "))
		}
		if a.Spec.TrunkRef != nil {
			rows[i].Details = append(rows[i].Details, "SIP trunk "+a.Spec.TrunkRef.Name)
		}
		if d.cfg.Voice != nil {
			rows[i].Sample = voiceSamplePath(a)
		}
		readiness(&rows[i], a.Status.Conditions)
	}
	d.renderResources(w, r, "Agents", "agents", "agents", rows)
}

func (d *dashboard) listTrunks(w http.ResponseWriter, r *http.Request) {
	var list switchboardv1.SIPTrunkList
	if err := d.cfg.Cache.List(r.Context(), &list, client.InNamespace(organization(r.Context()))); err != nil {
		d.unavailable(w, r, err, "The SIP trunks could not be listed")
		return
	}
	rows := make([]resourceRow, len(list.Items))
	for i := range list.Items {
		t := &list.Items[i]
		rows[i] = resourceRow{Name: t.Name, Details: []string{"address " + t.Spec.Address,
			"transport " + string(t.Spec.Transport)}}
		readiness(&rows[i], t.Status.Conditions)
	}
	d.renderResources(w, r, "SIP trunks", "trunks", "siptrunks", rows)
}

func (d *dashboard) listNumberLists(w http.ResponseWriter, r *http.Request) {
	var list switchboardv1.NumberListList
	if err := d.cfg.Cache.List(r.Context(), &list, client.InNamespace(organization(r.Context()))); err != nil {
		d.unavailable(w, r, err, "The number lists could not be listed")
		return
	}
	rows := make([]resourceRow, len(list.Items))
	for i := range list.Items {
		l := &list.Items[i]
		rows[i] = resourceRow{Name: l.Name, Details: []string{string(l.Spec.Type),
			strconv.Itoa(l.Status.Entries) + " entries"}}
		readiness(&rows[i], l.Status.Conditions)
	}
	d.renderResources(w, r, "Number lists", "number-lists", "numberlists", rows)
}
