// expect: 4:12 its constant sizes
void f(double A[10], double B[10]) {
  for (int i = 0; i < 10; i++)
    B[i] = A[i + 1];
}
