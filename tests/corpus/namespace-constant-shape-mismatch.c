// expect: - at its constant sizes
// namespace: {"A": ["float64", [12]], "B": ["float64", [10]]}
// via: magic
void f(double A[10], double B[10]) {
  for (int i = 0; i < 10; i++)
    B[i] = A[i];
}
