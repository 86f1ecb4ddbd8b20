pub fn doctor() {} pub struct Check; pub struct DoctorRequest;
