package httpapi

import "github.com/switchboard-dev/switchboard/internal/campaignview"

type campaignList struct {
	Data []campaignview.Campaign `json:"data"`
}
