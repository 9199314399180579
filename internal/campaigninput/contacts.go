package campaigninput

import (
	"mime"

	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// DecodeContacts decodes a body adding contacts to a campaign: JSON
// {"contacts": [...]} with at most MaxInlineContacts, or multipart with
// the CSV in the file field contacts, as on create. Other fields are
// ignored.
func DecodeContacts(contentType string, raw []byte) ([]campaigns.ContactInput, []validation.Item, error) {
	mediaType, params, _ := mime.ParseMediaType(contentType)
	var p validation.Problems
	var in []campaigns.ContactInput
	switch mediaType {
	case "application/json", "":
		obj, items := validation.ParseObject(raw)
		if items != nil {
			return nil, items, nil
		}
		var list []contact
		decodeField(obj, "contacts", &list, &p)
		in = jsonContacts(obj, list, MaxInlineContacts, &p)
	case "multipart/form-data":
		var items []validation.Item
		var err error
		if in, items, err = readMultipart(raw, params["boundary"], &p, func(string, []byte) {}); items != nil || err != nil {
			return nil, items, err
		}
	default:
		return nil, nil, ErrUnsupportedType
	}
	if len(p) > 0 {
		return nil, p, nil
	}
	return in, nil, nil
}
