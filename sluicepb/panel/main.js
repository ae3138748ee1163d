// The Jobs panel of the PocketBase admin UI: a link in the header and a
// superuser-only page that shows the sluice dashboard. The dashboard's
// requests carry the superuser's token in a cookie scoped to /api/jobs,
// since its event stream cannot send an Authorization header.
const dashboard = app.pb.buildURL("/api/jobs/dashboard/");

function saveToken() {
    const token = app.pb.authStore.token || "";
    const secure = window.location.protocol === "https:" ? "; Secure" : "";
    document.cookie = "sluicepb_token=" + encodeURIComponent(token) +
        "; path=/api/jobs; SameSite=Strict" + secure;
}

app.pb.authStore.onChange(saveToken);

app.store.headerLinks.splice(1, 0, {
    href: "#/jobs",
    icon: "ri-stack-line",
    label: "Jobs",
});

app.routes.superuserOnly("#/jobs", () => {
    saveToken();
    return t.div(
        { className: "page page-jobs", style: "padding:0" },
        t.iframe({
            src: dashboard,
            title: "Jobs",
            className: "sluicepb-jobs",
            style: "display:block;border:0;width:100%;height:calc(100vh - var(--headerHeight, 60px))",
        }),
    );
});
