package option

import "github.com/shotd/shotd"

// ContentFormats are the values of metadata_content_format.
var ContentFormats = []string{"html", "markdown"}

// metadataOptionSpecs are the rows of the metadata_* options of the JSON answer.
func metadataOptionSpecs() []*OptionSpec {
	return []*OptionSpec{
		metadataOption("metadata_image_size", "metadata.image_size, the image's width and height in pixels.",
			func(s *shotd.Options) *bool { return &s.MetaImageSize }),
		metadataOption("metadata_page_title", "metadata.page_title, the document's title.",
			func(s *shotd.Options) *bool { return &s.MetaPageTitle }),
		metadataOption("metadata_open_graph", "metadata.open_graph, the page's og: meta tags (og:title as title, and so on).",
			func(s *shotd.Options) *bool { return &s.MetaOpenGraph }),
		metadataOption("metadata_icon", "metadata.icon, the url and type of the page's icon (its link rel=icon, else /favicon.ico).",
			func(s *shotd.Options) *bool { return &s.MetaIcon }),
		metadataOption("metadata_fonts", "metadata.fonts, the font families the page's text is set in and the web fonts it loaded.",
			func(s *shotd.Options) *bool { return &s.MetaFonts }),
		metadataOption("metadata_http_response_status_code", "metadata.http_response_status_code, the HTTP status of the page's document (url sources).",
			func(s *shotd.Options) *bool { return &s.MetaStatusCode }),
		metadataOption("metadata_http_response_headers", "metadata.http_response_headers, the response headers of the page's document (url sources).",
			func(s *shotd.Options) *bool { return &s.MetaHeaders }),
		metadataOption("metadata_content", "metadata.content, a link to the page's content as a file of its own (see metadata_content_format).",
			func(s *shotd.Options) *bool { return &s.MetaContent }),
		enum("Metadata", "metadata_content_format", "html", "Format of metadata_content: the page's HTML as it is rendered, or that HTML converted to Markdown.", ContentFormats,
			func(o *draft, v string) { o.MetaContentFormat = v }),
		boolean("Metadata", "include_shadow_dom", "false", "metadata_content includes the content of the page's open shadow roots.",
			func(o *draft, v bool) { o.IncludeShadowDOM = v }),
	}
}

// metadataOption is a metadata_* option: a boolean that asks for field in the JSON answer.
func metadataOption(name, doc string, field func(*shotd.Options) *bool) *OptionSpec {
	return boolean("Metadata", name, "false", "JSON answer: "+doc, func(o *draft, v bool) { *field(o.Options) = v })
}
